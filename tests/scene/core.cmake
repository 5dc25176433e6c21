# Layout, build, filter and trace tests.
