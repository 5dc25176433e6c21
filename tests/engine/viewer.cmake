# Worker, interaction and desktop window tests.
