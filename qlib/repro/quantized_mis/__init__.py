"""Reproduction of paper 001 (quantized-model MIS): paper values, the synthetic study, and the
chapters' comparisons as functions returning ledger rows.

* :mod:`.paper` — every printed value and setting of the paper, typed once with its source (Tables
  2–5, Figures 1, 2 and 7, the §5.1 and §5.2 settings);
* :mod:`.study` — the synthetic-study driver (:func:`~.study.run_study`, one
  :class:`~.study.StudyConfig` record) and its code-keyed cache;
* :mod:`.molecular` — the molecular-study driver (:func:`~.molecular.run_study`, one
  :class:`~.molecular.MolecularConfig` record) and chapter 05's comparisons;
* :mod:`.rows` — the comparisons of chapters 01–04 (``list[Row]``);
* :mod:`.erm_facts` — the proof facts of §3 (Lemmas B.1, B.2, Prop. C.3's bound, Prop. C.4) checked on
  random instances (their library, :mod:`qlib.mia.erm`, is shared with paper 003).
"""
