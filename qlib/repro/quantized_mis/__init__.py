"""Reproduction of paper 001 (quantized-model MIS), mirroring ``chapters/quantized-mis/``: paper
values, the two study drivers, and one claims module per chapter (functions returning ledger rows).

* :mod:`.paper` — every printed value and setting of the paper, typed once with its source (Tables
  2–5, Figures 1, 2 and 7, the §5.1 and §5.2 settings);
* :mod:`.study` — the synthetic-study driver (:func:`~.study.run_study`, one
  :class:`~.study.StudyConfig` record), its code-keyed cache, and the study under both b-bit formulas
  (:func:`~.study.variant_effect`, chapters 01 and 03);
* :mod:`.molecular` — the molecular-study driver (:func:`~.molecular.run_study`, one
  :class:`~.molecular.MolecularConfig` record);
* the claims, one module per chapter (:data:`CLAIMS`): :mod:`.quantizer_claims` (01, Table 1),
  :mod:`.theory` (02, §3) with :mod:`.erm_facts` (the proof facts of §3: Lemmas B.1, B.2, Prop. C.3's
  bound, Prop. C.4, checked on random instances; their library, :mod:`qlib.mia.erm`, is shared with
  paper 003), :mod:`.synthetic_claims` (03, Table 2, Figure 2, §5.1.2), :mod:`.ranking_claims` (04,
  rank stability) with :mod:`.ranking_probe` (its estimator variants, as probe rows),
  :mod:`.molecular_claims` (05, Tables 3–5, §5.2) with :mod:`.molecular_probes` (the probes the causes
  of Tables 3–5 name: the embedder spread, the other reading, the unquantized R²'s conditioning),
  :mod:`.table3_probe` (06, the Table 3 investigation, one change at a time: driver and claims in one
  module) with :mod:`.table3_combos` (the changes combined, and the best on every task). A claims module is named after its
  chapter's topic, with ``_claims`` where the bare name is a library module (``qlib.quantizers``,
  ``qlib.synthetic``, ``qlib.ranking``) or the wing's driver (:mod:`.molecular`).
"""

#: the claims module(s) of each chapter of ``chapters/quantized-mis/`` (by notebook name): a chapter
#: imports its own claims module(s), the drivers and :mod:`.paper`, never another chapter's claims
#: (``tests/test_architecture_wings.py``)
CLAIMS = {
    "01-quantizers": ("quantizer_claims",),
    "02-theory": ("theory", "erm_facts"),
    "03-synthetic-study": ("synthetic_claims",),
    "04-synthetic-ranking": ("ranking_claims", "ranking_probe"),
    "05-molecular": ("molecular_claims", "molecular_probes"),
    "06-table3-investigation": ("table3_probe", "table3_combos"),
}
