"""Put the repository root on sys.path so that `import mini_dl` works under plain `pytest`."""
