# Connector tests.
