# compbook: `make book` sets up and builds the book; `make test` runs the tests (unit tests + every chapter).
PYTHON ?= python3
# torch first, pinned for these CPU machines (a CPU wheel is on disk); pyproject.toml itself accepts a range.
TORCH_SPEC ?= torch==2.13.0
NBMAKE_TIMEOUT ?= 600

.PHONY: setup book test clean

setup:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q "$(TORCH_SPEC)"
	$(PYTHON) -m pip install -q -e ".[book,test]"

# one retry: a notebook run can stall (CONTRIBUTING.md); the retry re-executes only what the first run did not cache
book: setup
	jupyter-book build --all . || { echo "book build failed; retrying once"; jupyter-book build . ; }
	@echo "The book is at _build/html/index.html"

# unit tests and chapters in separate pytest runs: a chapter run stalled (CONTRIBUTING.md) in 3 of 6 runs that came
# after the unit tests in the same process, and in none of 32 runs of chapter 1 on its own
test: setup
	$(PYTHON) -m pytest -q -p no:cacheprovider tests
	$(PYTHON) -m pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=$(NBMAKE_TIMEOUT) chapters

clean:
	rm -rf _build
