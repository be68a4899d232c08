"""Where reports live once written: where each is filed (filing), the index of them and its listings
(index), what is known of a verified report (verified), the secret the index's rows are signed under
(secret), the fleet's view across nodes (fleet), and a part's history across reports (parts)."""
