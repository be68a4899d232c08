"""The technician's desktop app (`nodeqc`, `nodeqc gui`): a second face on the runner's event stream.

Needs the GUI extra (PySide6, pyqtgraph). The engine never imports this package.
"""
