"""Where reports live once written: the archive and its index (store), the fleet's view across
nodes (fleet), and a part's history across reports (parts)."""
