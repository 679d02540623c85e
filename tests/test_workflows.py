"""The publishing workflows (.github/workflows/book.yml, book-paper.yml): a workflow cannot run here,
so their structure is checked — the triggers, the Pages permissions, the script they call (which
exists, and is what a checkout runs), the cache keyed by what the runner's skip hashes, the reports
uploaded on failure and the Pages deployment."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from qlib.book import profiles

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name: str) -> dict:
    wf = yaml.safe_load((WORKFLOWS / name).read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def _steps(wf: dict) -> list[dict]:
    return [s for job in wf["jobs"].values() for s in job.get("steps", [])]


def _uses(wf: dict, action: str) -> list[dict]:
    return [s for s in _steps(wf) if str(s.get("uses", "")).split("@")[0] == action]


def _publish_calls(wf: dict) -> list[dict[str, str]]:
    """The `make publish` command lines of the workflow, as {VARIABLE: value}."""
    calls = []
    for s in _steps(wf):
        for line in str(s.get("run", "")).splitlines():
            words = shlex.split(line)
            if words[:2] == ["make", "publish"]:
                calls.append(dict(w.split("=", 1) for w in words[2:] if "=" in w))
    return calls


@pytest.mark.parametrize("name", ["book.yml", "book-paper.yml"])
def test_workflow_deploys_to_pages_with_the_needed_permissions(name):
    wf = _load(name)
    assert wf["permissions"].get("pages") == "write" and wf["permissions"].get("id-token") == "write"
    assert wf["permissions"].get("contents") == "read"
    assert wf["concurrency"]["group"] == "pages"
    (upload,) = _uses(wf, "actions/upload-pages-artifact")
    (deploy,) = _uses(wf, "actions/deploy-pages")
    assert wf["jobs"]["deploy"]["needs"] == "build" and wf["jobs"]["deploy"]["environment"]["name"] == "github-pages"
    # what is deployed is the folder the (last) main publish writes
    sites = [c.get("SITE", "_build/site") for c in _publish_calls(wf)]
    assert upload["with"]["path"] == sites[0] == "_build/site"
    reports = [s for s in _uses(wf, "actions/upload-artifact") if s.get("if") == "failure()"]
    assert reports and ".failed/" in reports[0]["with"]["path"], "the runner's reports must be uploaded on failure"


@pytest.mark.parametrize("name", ["book.yml", "book-paper.yml"])
def test_workflow_calls_make_publish_which_exists(name):
    wf = _load(name)
    calls = _publish_calls(wf)
    assert calls, f"{name} never runs `make publish`"
    make = (ROOT / "Makefile").read_text()
    rule = re.search(r"^publish:.*\n((?:\t.*\n)+)", make, re.M)
    assert rule and "qlib.book publish" in rule.group(1)
    for var in {v for c in calls for v in c}:
        assert re.search(rf"^{var}\s*\?=", make, re.M), f"{name} sets {var}, which the Makefile does not read"
    for c in calls:
        assert c.get("PROFILE", "default") in profiles.PROFILES or c["PROFILE"] == "$PROFILE"


def test_cache_is_keyed_by_what_the_runner_hashes():
    """The executed tree is restored from the last run of the profile (restore-keys) and keyed by the
    notebooks, the qlib sources and the profiles; the runner's stamps then decide what re-runs."""
    for name in ("book.yml", "book-paper.yml"):
        wf = _load(name)
        (restore,) = _uses(wf, "actions/cache/restore")
        (save,) = _uses(wf, "actions/cache/save")
        assert restore["with"]["key"] == save["with"]["key"]
        for pattern in ("chapters/**", "qlib/**", "profiles/**"):
            assert pattern in restore["with"]["key"], f"{name}: cache key does not hash {pattern}"
        assert restore["with"]["restore-keys"].strip() and save["if"].startswith("always()")
        outs = {c.get("BOOK_OUT", "_build/book") for c in _publish_calls(wf)}
        assert outs == set(str(restore["with"]["path"]).split()), f"{name}: cached paths are not the runner's trees"


def test_book_triggers_push_to_main_and_a_manual_profile():
    wf = _load("book.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    inp = wf["on"]["workflow_dispatch"]["inputs"]["profile"]
    assert set(inp["options"]) == set(profiles.PROFILES) and inp["default"] == "default"
    (call,) = _publish_calls(wf)
    assert call["PROFILE"] == "$PROFILE"
    assert "inputs.profile" in wf["env"]["PROFILE"]


def test_paper_workflow_runs_on_a_gpu_label_and_publishes_default_under_default():
    wf = _load("book-paper.yml")
    assert "runner" in wf["on"]["workflow_dispatch"]["inputs"] and wf["on"]["schedule"][0]["cron"]
    assert "inputs.runner" in wf["jobs"]["build"]["runs-on"]
    calls = _publish_calls(wf)
    assert [(c["PROFILE"], c["SITE"], c["DEVICE"]) for c in calls] == [
        ("paper", "_build/site", "cuda"), ("default", "_build/site/default", "cuda")]
    assert len({c["BOOK_OUT"] for c in calls}) == 2, "each profile needs its own executed tree"


def test_readme_keeps_two_newcomer_commands_and_says_how_to_publish():
    readme = (ROOT / "README.md").read_text()
    quick = re.search(r"## The two commands\s*```bash\n(.*?)```", readme, re.S).group(1)
    assert [ln.split("#")[0].strip() for ln in quick.strip().splitlines()] == ["make book", "make test"]
    publishing = re.search(r"## Publishing\n(.*?)\n## ", readme, re.S).group(1)
    for needle in ("make publish", "book.yml", "book-paper.yml", "PROFILE=paper", "SITE=_build/site/default",
                   "python -m qlib.book.launch", "1. ", "2. ", "3. "):
        assert needle in publishing, f"README's Publishing section lacks {needle!r}"
