"""Reproduction of paper 001 (quantized-model MIS): paper values, the synthetic study, and the
chapters' comparisons as functions returning ledger rows.

* :mod:`.paper` — printed values and settings (Table 2, Figure 2's ρ, §5.1 settings);
* :mod:`.study` — the synthetic-study driver (:func:`~.study.run_study`) and its code-keyed cache;
* :mod:`.rows` — the comparisons of chapters 01–04 (``list[Row]``);
* :mod:`.erm_facts` — the proof facts of §3 (Lemmas B.1, B.2, Prop. C.3's bound, Prop. C.4) checked on
  random instances (their library, :mod:`qlib.mia.erm`, is shared with paper 003).
"""
