"""DuckDB SQL shipped as package data: ``ddl/`` (schemas and tables) and ``marts/`` (one mart per file)."""
