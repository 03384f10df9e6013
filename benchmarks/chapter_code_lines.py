import json, re, sys, ast
from pathlib import Path
HIDDEN = {"hide-input", "remove-input", "remove-cell"}
SHOWS = re.compile(r"\b(print|display|frame_slider|imshow|plt\.|plots\.|\.plot\(|show\(|HTML\()")
def count(nb_path):
    nb = json.loads(Path(nb_path).read_text())
    lines = results = 0
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code" or i == 0:
            continue
        src = "".join(c["source"])
        tags = set(c.get("metadata", {}).get("tags", []))
        shows = bool(SHOWS.search(src))
        try:
            body = ast.parse(src.replace("%", "#")).body
            shows = shows or (body and isinstance(body[-1], ast.Expr) and not isinstance(body[-1].value, ast.Constant))
        except SyntaxError:
            pass
        results += bool(shows)
        if tags & HIDDEN:
            continue
        lines += sum(1 for l in src.split("\n") if l.strip() and not l.strip().startswith("#"))
    return lines, results
for p in sorted(Path(sys.argv[1]).glob("*.ipynb")):
    l, r = count(p)
    print(f"{p.stem:28s} {l:4d} lines {r:3d} results {l / max(r, 1):5.1f} per result")
