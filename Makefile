# compbook: `make book` sets up and builds the book; `make test` runs the tests (unit tests, every chapter once in
# a simulated Colab, the book built from those executed chapters, a browser check of every built page, the
# full-mode smoke); `make runtimes` records the chapters' times of the last `make test`.
PYTHON ?= python3
# torch first, pinned for these CPU machines (a CPU wheel is on disk); pyproject.toml itself accepts a range.
TORCH_SPEC ?= torch==2.13.0
NBMAKE_TIMEOUT ?= 600
# where `make test` puts the chapters the simulated Colab executed and builds the book from them (a scratch copy
# of the book's sources)
EXECUTED := _executed
# chapters the simulated Colab runs at a time, and test processes for the unit tests and the full-mode smoke
# (pytest-xdist; 0 runs them in pytest's own process). compbook runs torch on one thread, so two at a time use both
# cores of a 2-core machine (CI's); `make test COLAB_JOBS=1 TEST_JOBS=0` runs one at a time (CONTRIBUTING.md).
COLAB_JOBS ?= 2
TEST_JOBS ?= 2
# headless runs never start a live widget: sliders are drawn as kernel-free JS frame viewers, and tqdm draws no
# widget progress bars (CONTRIBUTING.md, "Headless runs never go live")
HEADLESS := COMPBOOK_WIDGETS=static TQDM_DISABLE=1

# where `make test` runs every chapter once more in the full-mode smoke (full mode's code paths at a CPU test's
# sizes, COMPBOOK_SMOKE=1), with a scratch copy of data/ as its data store: full-mode results never reach data/
SMOKED := _smoke
SMOKE_ENV := COMPBOOK_MODE=full COMPBOOK_SMOKE=1 COMPBOOK_DATA=$(CURDIR)/$(SMOKED)/data

.PHONY: setup book test runtimes smoke browser-setup clean

setup:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q "$(TORCH_SPEC)"
	$(PYTHON) -m pip install -q -e ".[book,test,serving,sweeps]"

book: setup
	$(HEADLESS) jupyter-book build --all .
	@echo "The book is at _build/html/index.html"

# Debian's chromium and its driver, for the browser test (needs root or sudo where they are missing)
browser-setup:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium chromium-driver; }

# `make test` changes no tracked file: it compares `git status` and `git diff` of tracked files before and after
# (in a git checkout; elsewhere nothing to compare)
TRACKED := ( ! git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { git status --porcelain --untracked-files=no \
  && git diff HEAD --binary | sha256sum; } )

test: setup browser-setup
	rm -rf $(EXECUTED) && mkdir -p $(EXECUTED)
	@$(TRACKED) > $(EXECUTED)/tracked-before.txt
	$(PYTHON) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadgroup tests --ignore=tests/browser \
	  --ignore=tests/test_colab.py
	# every chapter once, in the simulated Colab (tests/test_colab.py): the executed notebooks, the figure check's
	# log and the chapters' times land in $(EXECUTED)/
	cp -r _config.yml _toc.yml intro.md _static _ext appendix $(EXECUTED)/
	COMPBOOK_EXECUTED=$(abspath $(EXECUTED)) COMPBOOK_COLAB_JOBS=$(COLAB_JOBS) \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_colab.py
	ln -s ../compbook ../data $(EXECUTED)/
	sed -i 's/^\(  execute_notebooks:\).*/\1 "off"   # make test: built from the notebooks the simulated Colab executed/' \
	  $(EXECUTED)/_config.yml
	jupyter-book build $(EXECUTED)
	COMPBOOK_BOOK_HTML=$(EXECUTED)/_build/html COMPBOOK_FIGCHECK_LOG=$(EXECUTED)/figures.jsonl \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/browser
	$(MAKE) smoke
	@$(TRACKED) > $(EXECUTED)/tracked-after.txt
	@cmp -s $(EXECUTED)/tracked-before.txt $(EXECUTED)/tracked-after.txt || { \
	  echo "make test changed tracked files (git status before, then after):"; \
	  cat $(EXECUTED)/tracked-before.txt; echo ---; cat $(EXECUTED)/tracked-after.txt; exit 1; }
	@echo "make test: green; the chapters' times are in $(EXECUTED)/colab.xml (make runtimes records them)"

# the chapters' CPU run times from the last `make test` (its simulated-Colab run): data/runtimes.json and the
# landing page's table (commit both)
runtimes:
	$(PYTHON) -m compbook.results runtimes $(EXECUTED)/colab.xml

# every chapter top to bottom in full mode, shrunk (CONTRIBUTING.md, "Full-mode smoke")
smoke:
	rm -rf $(SMOKED) && mkdir -p $(SMOKED)
	cp -r _config.yml _toc.yml intro.md _static chapters $(SMOKED)/
	cp -r data $(SMOKED)/data
	ln -s ../compbook $(SMOKED)/
	$(SMOKE_ENV) $(HEADLESS) $(PYTHON) -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=$(NBMAKE_TIMEOUT) \
	  -n $(TEST_JOBS) --dist worksteal --durations=0 $(SMOKED)/chapters

clean:
	rm -rf _build $(EXECUTED) $(SMOKED)
