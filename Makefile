# compbook: `make book` sets up and builds the book; `make test` runs the tests (unit tests, every chapter once,
# the book built from those executed chapters, and a browser check of every built page).
PYTHON ?= python3
# torch first, pinned for these CPU machines (a CPU wheel is on disk); pyproject.toml itself accepts a range.
TORCH_SPEC ?= torch==2.13.0
NBMAKE_TIMEOUT ?= 600
# where `make test` executes the chapters and builds the book from them (a scratch copy of the book's sources)
# (not under _build/: nbmake skips notebooks in any folder named _build)
EXECUTED := _executed
# headless runs never start a live widget: sliders are drawn as kernel-free JS frame viewers, and tqdm draws no
# widget progress bars (CONTRIBUTING.md, "Headless runs never go live")
HEADLESS := COMPBOOK_WIDGETS=static TQDM_DISABLE=1

# where `make test` runs every chapter once more in the full-mode smoke (full mode's code paths at a CPU test's
# sizes, COMPBOOK_SMOKE=1), with a scratch copy of data/ as its data store: full-mode results never reach data/
SMOKED := _smoke
SMOKE_ENV := COMPBOOK_MODE=full COMPBOOK_SMOKE=1 COMPBOOK_DATA=$(CURDIR)/$(SMOKED)/data

.PHONY: setup book test smoke browser-setup clean

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

test: setup browser-setup
	$(PYTHON) -m pytest -q -p no:cacheprovider tests --ignore=tests/browser
	rm -rf $(EXECUTED) && mkdir -p $(EXECUTED)
	cp -r _config.yml _toc.yml intro.md _static _ext appendix chapters $(EXECUTED)/
	ln -s ../compbook ../data $(EXECUTED)/
	cp tests/figcheck_conftest.py $(EXECUTED)/conftest.py
	$(HEADLESS) COMPBOOK_FIGCHECK=$(abspath $(EXECUTED))/figures.jsonl \
	  $(PYTHON) -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=$(NBMAKE_TIMEOUT) --durations=0 \
	  --junitxml=$(EXECUTED)/nbmake.xml --overwrite $(EXECUTED)/chapters
	sed -i 's/^\(  execute_notebooks:\).*/\1 "off"   # make test: built from the notebooks nbmake executed/' \
	  $(EXECUTED)/_config.yml
	jupyter-book build $(EXECUTED)
	COMPBOOK_BOOK_HTML=$(EXECUTED)/_build/html COMPBOOK_FIGCHECK_LOG=$(EXECUTED)/figures.jsonl \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/browser
	# a green run records its chapters' times: data/runtimes.json and the landing page's table (commit them)
	$(PYTHON) -m compbook.results runtimes $(EXECUTED)/nbmake.xml
	$(MAKE) smoke

# every chapter top to bottom in full mode, shrunk (CONTRIBUTING.md, "Full-mode smoke")
smoke:
	rm -rf $(SMOKED) && mkdir -p $(SMOKED)
	cp -r _config.yml _toc.yml intro.md _static chapters $(SMOKED)/
	cp -r data $(SMOKED)/data
	ln -s ../compbook $(SMOKED)/
	$(SMOKE_ENV) $(HEADLESS) $(PYTHON) -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=$(NBMAKE_TIMEOUT) \
	  --durations=0 $(SMOKED)/chapters

clean:
	rm -rf _build $(EXECUTED) $(SMOKED)
