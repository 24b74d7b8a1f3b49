//! The integration suite: one binary, one module per command.
