"""compbook: the helper package of the compbook teaching book.

Chapters import small, well-named functions from its modules (``compbook.cppn``, ``compbook.picbreeder``,
``compbook.train``, ...). Importing it has no side effects.
"""

__version__ = "0.1.0"
