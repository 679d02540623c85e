"""Claims of chapter eden/04 (paper 002, Appendix I.3 and I.5): Figure 10 (distributed logistic regression)
and Figure 12 (distributed power iteration), on the frames of :mod:`.learning`'s drivers."""

from __future__ import annotations

import pandas as pd

from qlib.repro import ledger
from qlib.repro.eden._claims import best_per_bits
from qlib.repro.eden.learning import missing_data
from qlib.repro.eden.paper import FIG10, FIG12
from qlib.validation import check_int

__all__ = ["figure10_rows", "figure10_text", "header_bits_per_coord", "header_text", "figure12_rows", "figure12_text",
           "not_offline_rows"]


def figure10_rows(df: pd.DataFrame, note: str = "") -> list[ledger.Row]:
    """App. I.3: "EDEN is closer to the optimum than other methods in all the bit budgets" (paper
    claim, strict: a tie for first place fails, so the null "EDEN tied with the best" fails), and our
    two comparisons at equal bits actually sent (``probe`` rows: ablations of ours, not claims of the
    paper), where the frame has the bits sent (``bits_sent_per_coord``):

    * the row's own test on an axis of bits sent: every EDEN run against every other run that sent no more
      bits (passes when each EDEN run with such runs is strictly the closest among them);
    * every other run against the EDEN runs that sent no more bits (passes when an EDEN run ended closer for
      each); a run that sent fewer bits than every EDEN run has no such partner and counts as *not beaten*
      (it is kept, not dropped)."""
    res = best_per_bits(df, "distance", True)
    wins = [b for b, best, _ in res if best == "EDEN"]
    ours = f"EDEN closest at {len(wins)}/{len(res)} budgets" + (
        "" if len(wins) == len(res) else f" (not at b = {', '.join(f'{b:g}' for b, best, _ in res if best != 'EDEN')})")
    out = [ledger.claim(ledger.Item("Figure 10 / App. I.3", "EDEN closest to the uncompressed model at every budget", "EDEN closest at every b"),
                        ours, len(wins) == len(res), tolerance="strictly closest",
                        null=ledger.Null("EDEN tied with the best other method", fails=True), note=note)]
    if "bits_sent_per_coord" in df.columns:
        eden = df[df["method"] == "EDEN"]
        others = df[df["method"] != "EDEN"]
        cmp_b, won, lost_at, pairs = 0, 0, [], 0
        for _, e in eden.iterrows():  # the row's test at equal bits: EDEN against the runs that sent no more
            cand = others[others["bits_sent_per_coord"] <= e["bits_sent_per_coord"] + 1e-9]
            if len(cand):
                cmp_b, pairs = cmp_b + 1, pairs + len(cand)
                if float(cand["distance"].min()) > e["distance"]:
                    won += 1
                else:
                    lost_at.append(f"b={e['bits']:g}")
        out.append(ledger.claim(ledger.Item("Figure 10 (ablation, ours)",
                                            "EDEN closest at every budget, counted in bits sent (each EDEN run against "
                                            "every other run that sent no more bits)", "EDEN closest at every b"),
                                f"EDEN closest at {won}/{cmp_b} budgets with a run to compare ({pairs} pairs)"
                                + (f" (not at {', '.join(lost_at)})" if lost_at else ""), bool(cmp_b) and not lost_at,
                                kind="probe", tolerance="strictly closest (the Figure 10 row's test, at equal bits sent)",
                                note="our variant of the row's test: bits sent per coordinate counted from the messages "
                                     "(header included) in place of the budget b"))
        beaten, lost, unpaired = 0, [], 0
        for _, p in others.iterrows():  # an EDEN run that sent no more bits and ended closer
            cand = eden[eden["bits_sent_per_coord"] <= p["bits_sent_per_coord"] + 1e-9]
            if len(cand) and float(cand["distance"].min()) < p["distance"]:
                beaten += 1
            else:
                unpaired += int(not len(cand))
                lost.append(f"{p['method']} b={p['bits']:g}")
        out.append(ledger.claim(ledger.Item("Figure 10 (ablation, ours)",
                                            "an EDEN run with no more bits sent is closer than every "
                                            "other run", "not a claim of the paper"),
                                f"closer than {beaten}/{len(others)} other runs"
                                + (f" (not: {', '.join(lost)})" if lost else ""), not lost, kind="probe",
                                tolerance="every other run",
                                note="our fairness analysis: bits sent per coordinate counted from the messages "
                                     "(header included); every run kept"
                                     + (f", {unpaired} of them sent fewer bits than any EDEN run" if unpaired else "")))
    return out


def figure10_text(df: pd.DataFrame, rounds: int) -> str:
    """Markdown: the Figure 10 run against the paper's (``rounds`` rounds of distributed gradient descent,
    Appendix I.3's 20 clients and 100 rounds) and the norm of the uncompressed model (``df``: the frame of
    :func:`.learning.figure10`)."""
    rounds = check_int("rounds", rounds, low=1)
    if not isinstance(df, pd.DataFrame) or "ref_norm" not in df.columns or df.empty:
        raise ValueError("df must be the non-empty frame learning.figure10() returns (column ref_norm)")
    return (f"{rounds} rounds of distributed gradient descent with {FIG10['clients']} clients per "
            f"method and budget (the paper: {FIG10['rounds']} rounds); uncompressed model norm "
            f"{df['ref_norm'].iloc[0]:.3f}.")


def header_bits_per_coord(df: pd.DataFrame) -> pd.DataFrame:
    """Per (method, b) of a Figure 10 frame: the bits actually sent per coordinate split into the
    paper's budget b and the rest (message header, scalars, padding) — what the paper's x-axis leaves
    out. Needs the ``bits_sent_per_coord`` column."""
    if not isinstance(df, pd.DataFrame) or not {"method", "bits", "bits_sent_per_coord"} <= set(df.columns):
        raise ValueError("df must be a Figure 10 frame with columns method, bits and bits_sent_per_coord")
    out = df[["method", "bits", "bits_sent_per_coord"]].copy()
    out["overhead per coord"] = out["bits_sent_per_coord"] - out["bits"]
    return out.reset_index(drop=True)


def header_text(hb: pd.DataFrame) -> str:
    """Markdown: the range over the runs of the bits per coordinate a Figure 10 message sends beyond its
    budget b (message header, scalars, padding; Kashin+SQ's frame coefficients), read from
    :func:`header_bits_per_coord`'s frame."""
    if not isinstance(hb, pd.DataFrame) or "overhead per coord" not in hb.columns or hb.empty:
        raise ValueError("hb must be the non-empty frame header_bits_per_coord() returns (column 'overhead per coord')")
    return ("The bits actually sent per coordinate, split into the budget $b$ and the rest (message header, scalars, "
            f"padding; Kashin+SQ's frame coefficients): the overhead ranges from {hb['overhead per coord'].min():.2f} to "
            f"{hb['overhead per coord'].max():.2f} bits per coordinate at d = 123. The figure above uses the paper's budget "
            "axis; our fairness ablation in the ledger counts the bits sent.")


def figure12_rows(df: pd.DataFrame, note: str = "") -> list[ledger.Row]:
    """App. I.5: "EDEN achieves the lowest L2 error for all values of b" (per data set)."""
    out = []
    for ds, g in df.groupby("dataset"):
        res = best_per_bits(g, "error", True)
        wins = [b for b, best, _ in res if best == "EDEN"]
        ours = f"EDEN lowest at {len(wins)}/{len(res)} budgets" + (
            "" if len(wins) == len(res) else f" (not at b = {', '.join(f'{b:g}' for b, best, _ in res if best != 'EDEN')})")
        out.append(ledger.claim(ledger.Item(f"Figure 12 / App. I.5 ({ds})", "EDEN lowest eigenvector error at every b", "EDEN lowest at every b"),
                                ours, len(wins) == len(res), tolerance="strictly lowest",
                                null=ledger.Null("EDEN tied with the best other method", fails=True), note=note))
    return out


def figure12_text(rounds: int, rows: int | None = None) -> str:
    """Markdown: the Figure 12 run against the paper's (``rounds`` rounds, Appendix I.5's 10 clients and
    server learning rate 0.1; ``rows``: only the first images, None: all)."""
    rounds = check_int("rounds", rounds, low=1)
    if rows is not None:
        rows = check_int("rows", rows, low=1)
    return (f"{rounds} rounds per method and budget, {FIG12['clients']} clients, server learning "
            f"rate {FIG12['lr']} (the paper does not give the number of rounds)"
            + (f"; only the first {rows} images." if rows else "."))


def not_offline_rows(data_dir=None) -> list[ledger.Row]:
    """The not-available-offline row of Figure 12's CIFAR-10 panel when CIFAR-10 is absent from the
    data directory (none when it is there)."""
    return missing_data(data_dir, figures=("12",))
