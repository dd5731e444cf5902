"""One subpackage per experiment; shared helpers live in the pglab package itself."""
