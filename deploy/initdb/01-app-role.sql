-- Creates Engram's service role with a password, so `engram serve` can log in over TCP.
--
-- docker-compose.yml mounts this directory at /docker-entrypoint-initdb.d of the `db` service. The
-- postgres image runs these files with psql (as POSTGRES_USER, in POSTGRES_DB, ON_ERROR_STOP=1) only
-- when it initialises an EMPTY data directory; on an existing volume they are skipped.
--
-- The attributes match migrations/versions/0001_core.py, which creates the same role without a
-- password when it is missing and leaves an existing one alone. The migration, not this file, grants
-- the role its privileges. The password comes from the db container's ENGRAM_APP_DB_PASSWORD (psql's
-- \getenv, PostgreSQL 15+), the same variable the service reads.
--
-- To change the password of an existing volume later:
--   docker compose exec db psql -U postgres -d engram -c "ALTER ROLE engram_app PASSWORD 'new-secret'"
-- then set ENGRAM_APP_DB_PASSWORD to it and restart the `engram` service.

\getenv app_password ENGRAM_APP_DB_PASSWORD
\if :{?app_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'ENGRAM_APP_DB_PASSWORD is not set in the db container'; END $$;
\endif

CREATE ROLE engram_app LOGIN PASSWORD :'app_password'
  NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
