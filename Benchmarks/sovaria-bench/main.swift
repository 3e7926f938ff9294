print("sovaria-bench: not built yet")
