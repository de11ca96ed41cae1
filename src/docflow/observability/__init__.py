"""What the team running docflow watches: Prometheus metrics (`metrics.py` defines every one,
`collectors.py` reads the database's signals at scrape time, `exposition.py` renders them, in
one process or across `docflow api --workers N`)."""
