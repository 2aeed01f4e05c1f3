# The API reference: every public Python name from its docstring (autodoc), and the project's documents (MyST).
# Built by `make docs` (sphinx-build -W -c docs/api docs build/docs/html: warnings are errors).
import kasoku

project = "kasoku"
release = kasoku.__version__
extensions = ["sphinx.ext.autodoc", "myst_parser"]  # docstrings are plain text and reST (no Google/NumPy sections)
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "api/index"  # the source folder is docs/ (the guides beside the reference)
exclude_patterns = ["data"]
autodoc_default_options = {"members": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
html_theme = "alabaster"
html_title = f"kasoku {release}"
html_theme_options = {  # the guides hold wide tables and code (the C++ headers: 120 columns)
    "page_width": "1240px",
    "body_max_width": "none",
    "code_font_size": "0.78em",
}
myst_heading_anchors = 3
# The documents link to source files and to each other by relative paths that Sphinx does not resolve as pages.
suppress_warnings = ["myst.xref_missing", "myst.header"]
