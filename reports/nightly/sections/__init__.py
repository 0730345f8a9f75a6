"""The nightly report's sections, one module each; the report's ordered list names them."""
