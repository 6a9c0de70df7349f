// Versioned schema migrations of postgresStorage. Each migration runs once,
// in order, recorded in <schema>.schema_migrations. All pending migrations run
// inside one DO block (one statement, so one transaction on every driver and
// pooling mode) that first takes a transaction-scoped advisory lock: two
// instances starting at once run them one after the other, and the second
// finds nothing left to do. The lock guards migration only; writers never use
// advisory locks.

import { HarnessError } from "../kernel/harness_error.ts";
import type { PostgresExecutor } from "./postgres_executor.ts";

/** One step of the schema; `sql` gets the quoted schema name. */
interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: (schema: string) => string;
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions, their events and writer leases",
    sql: (s) => `
      CREATE TABLE ${s}.sessions (
        id text PRIMARY KEY,
        header text NOT NULL,
        created_at bigint NOT NULL,
        next_seq bigint NOT NULL DEFAULT 0,
        size bigint NOT NULL DEFAULT 0,
        updated_at bigint NOT NULL
      );
      CREATE TABLE ${s}.session_events (
        session_id text NOT NULL,
        seq bigint NOT NULL,
        type text NOT NULL,
        event text NOT NULL,
        PRIMARY KEY (session_id, seq)
      );
      CREATE TABLE ${s}.session_writers (
        session_id text PRIMARY KEY,
        token text NOT NULL,
        fence bigint NOT NULL,
        expires_at timestamptz NOT NULL
      );
      -- Delete needs a fresh snapshot after it has locked the session row (a
      -- single statement would miss events committed while it waited), so it
      -- is a function: each statement of a volatile function sees the latest
      -- commits.
      CREATE FUNCTION ${s}.delete_session(p_id text, p_token text) RETURNS text
      LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE found_id text;
      BEGIN
        IF p_token IS NULL THEN
          PERFORM 1 FROM ${s}.session_writers WHERE session_id = p_id AND expires_at > clock_timestamp();
          IF FOUND THEN RETURN 'busy'; END IF;
        ELSE
          PERFORM 1 FROM ${s}.session_writers
            WHERE session_id = p_id AND token = p_token AND expires_at > clock_timestamp() FOR SHARE;
          IF NOT FOUND THEN RETURN 'busy'; END IF;
        END IF;
        SELECT id INTO found_id FROM ${s}.sessions WHERE id = p_id FOR UPDATE;
        IF NOT FOUND THEN RETURN 'missing'; END IF;
        DELETE FROM ${s}.session_events WHERE session_id = p_id;
        DELETE FROM ${s}.sessions WHERE id = p_id;
        DELETE FROM ${s}.session_writers WHERE session_id = p_id AND expires_at <= clock_timestamp();
        RETURN 'deleted';
      END
      $fn$;
    `,
  },
  {
    version: 2,
    description: "list() reads sessions in creation order",
    sql: (s) => `CREATE INDEX sessions_created_at ON ${s}.sessions (created_at, id);`,
  },
  {
    version: 3,
    description: "append_events(): one function call per append",
    // The append as a function, so the client sends a one-line call instead of
    // a statement the server parses and plans on every append (most of the
    // time of a one-event append): plpgsql prepares the plans of its
    // statements once per connection. It does what the former one-statement
    // append did, in the same transaction: the live lease row is read FOR
    // SHARE (a hand-over, which updates that row, waits for this append to
    // commit, or made it no longer match), the session row's next_seq is
    // compared and advanced (its row lock serialises racing appends), the
    // events are inserted and a notification is sent. A refused append writes
    // nothing; `stored` then tells a missing session from a seq mismatch.
    sql: (s) => `
      CREATE FUNCTION ${s}.append_events(p_id text, p_expected bigint, p_token text, p_types text[],
        p_events text[], p_now bigint, p_bytes bigint, p_channel text,
        OUT applied float8, OUT lease_ok boolean, OUT stored float8)
      LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        n integer := coalesce(cardinality(p_events), 0);
        advanced bigint;
      BEGIN
        IF p_token IS NULL THEN
          PERFORM 1 FROM ${s}.session_writers
            WHERE session_id = p_id AND expires_at > clock_timestamp() FOR SHARE;
          lease_ok := NOT FOUND;
        ELSE
          PERFORM 1 FROM ${s}.session_writers
            WHERE session_id = p_id AND token = p_token AND expires_at > clock_timestamp() FOR SHARE;
          lease_ok := FOUND;
        END IF;
        IF lease_ok THEN
          UPDATE ${s}.sessions SET next_seq = next_seq + n, size = size + p_bytes,
            updated_at = CASE WHEN n > 0 THEN p_now ELSE updated_at END
          WHERE id = p_id AND next_seq = p_expected
          RETURNING next_seq INTO advanced;
          IF FOUND THEN
            IF n > 0 THEN
              INSERT INTO ${s}.session_events (session_id, seq, type, event)
              SELECT p_id, p_expected + u.i - 1, u.t, u.e
              FROM unnest(p_types, p_events) WITH ORDINALITY AS u(t, e, i);
              PERFORM pg_notify(p_channel, advanced || ' ' || p_id);
            END IF;
            applied := advanced;
            stored := advanced;
            RETURN;
          END IF;
        END IF;
        SELECT next_seq INTO stored FROM ${s}.sessions WHERE id = p_id;
      END
      $fn$;
    `,
  },
  {
    version: 4,
    description: "delete_session() keeps the lease row, so that fence counters never go back",
    // Version 1 removed an expired lease row with its session: a session created again under the same id started
    // its fence counter at 1 again, and a fence an earlier writer had handed to another system (to fence its own
    // writes) could come round again. The row stays now, expired; the next acquire counts on from it.
    sql: (s) => `
      CREATE OR REPLACE FUNCTION ${s}.delete_session(p_id text, p_token text) RETURNS text
      LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE found_id text;
      BEGIN
        IF p_token IS NULL THEN
          PERFORM 1 FROM ${s}.session_writers WHERE session_id = p_id AND expires_at > clock_timestamp();
          IF FOUND THEN RETURN 'busy'; END IF;
        ELSE
          PERFORM 1 FROM ${s}.session_writers
            WHERE session_id = p_id AND token = p_token AND expires_at > clock_timestamp() FOR SHARE;
          IF NOT FOUND THEN RETURN 'busy'; END IF;
        END IF;
        SELECT id INTO found_id FROM ${s}.sessions WHERE id = p_id FOR UPDATE;
        IF NOT FOUND THEN RETURN 'missing'; END IF;
        DELETE FROM ${s}.session_events WHERE session_id = p_id;
        DELETE FROM ${s}.sessions WHERE id = p_id;
        RETURN 'deleted';
      END
      $fn$;
    `,
  },
  {
    version: 5,
    description: "delete_session() locks the lease row before it checks the lease",
    // Versions 1 and 4 checked the lease without a lock, then waited for the session row: a lease taken in between
    // (and a log loaded under it) went unseen, and the delete removed a session another writer had just resumed. The
    // lease row is now locked first (made, expired, when missing: an acquire then counts on from its fence 0), so an
    // acquire waits for the delete to commit (and then finds no session), or commits first and the delete sees its
    // live lease. The lease row is locked before the session row, in the order an append locks them.
    sql: (s) => `
      CREATE OR REPLACE FUNCTION ${s}.delete_session(p_id text, p_token text) RETURNS text
      LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        found_id text;
        made boolean := false;
      BEGIN
        IF p_token IS NULL THEN
          INSERT INTO ${s}.session_writers (session_id, token, fence, expires_at)
            VALUES (p_id, '', 0, '-infinity') ON CONFLICT (session_id) DO NOTHING;
          made := FOUND;
          -- Locked whatever its expiry (a locking read locks only the rows it returns), then checked afresh.
          PERFORM 1 FROM ${s}.session_writers WHERE session_id = p_id FOR UPDATE;
          PERFORM 1 FROM ${s}.session_writers WHERE session_id = p_id AND expires_at > clock_timestamp();
          IF FOUND THEN RETURN 'busy'; END IF;
        ELSE
          PERFORM 1 FROM ${s}.session_writers
            WHERE session_id = p_id AND token = p_token AND expires_at > clock_timestamp() FOR SHARE;
          IF NOT FOUND THEN RETURN 'busy'; END IF;
        END IF;
        SELECT id INTO found_id FROM ${s}.sessions WHERE id = p_id FOR UPDATE;
        IF NOT FOUND THEN
          IF made THEN DELETE FROM ${s}.session_writers WHERE session_id = p_id AND fence = 0; END IF;
          RETURN 'missing';
        END IF;
        DELETE FROM ${s}.session_events WHERE session_id = p_id;
        DELETE FROM ${s}.sessions WHERE id = p_id;
        RETURN 'deleted';
      END
      $fn$;
    `,
  },
  {
    version: 6,
    description: "sessions name their parent and origin, indexed: descendants without reading every header",
    // A subagent child names its parent only in its header, so a delete read every stored header to find a
    // session's descendants. The header's `parentSession` and `origin` are now columns, filled from the header by a
    // trigger (so that the inserts of a build from before this migration, still running during an upgrade, fill them
    // too) and backfilled here from the stored headers; the index on parent_id finds a session's children. PostgreSQL
    // refuses to read a field of a JSON text that escapes a NUL or a lone surrogate anywhere (JSON.stringify writes
    // both, in a title, say): such escapes are then read as U+001A (SUBSTITUTE), which changes no session id (an id
    // holds neither, nor a backslash or a control character). An ASCII replacement, not U+FFFD: a database not in
    // UTF-8 (SQL_ASCII, LATIN1) cannot hold U+FFFD and would refuse that escape too. A header that is no JSON object
    // (damaged by hand), or one nested deeper than PostgreSQL's JSON parser goes (past max_stack_depth, which no typed
    // header field reaches), names no parent: it fails neither this migration nor an insert. The table stays locked
    // from the ALTER to the commit, so no insert falls between the backfill and the trigger.
    sql: (s) => `
      CREATE FUNCTION ${s}.session_lineage(p_header text, OUT parent_id text, OUT origin text)
      LANGUAGE plpgsql IMMUTABLE AS $fn$
      DECLARE h json;
      BEGIN
        FOR attempt IN 1..2 LOOP
          BEGIN
            h := CASE WHEN attempt = 1 THEN p_header
              ELSE regexp_replace(p_header, E'\\\\\\\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})', E'\\\\\\\\u001a', 'g') END;
            IF json_typeof(h) = 'object' THEN
              IF json_typeof(h -> 'parentSession') = 'string' THEN parent_id := h ->> 'parentSession'; END IF;
              IF json_typeof(h -> 'origin') = 'string' THEN origin := h ->> 'origin'; END IF;
            END IF;
            RETURN;
          EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            parent_id := NULL;
            origin := NULL;
          END;
        END LOOP;
      END
      $fn$;
      CREATE FUNCTION ${s}.sessions_fill_lineage() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      BEGIN
        SELECT l.parent_id, l.origin INTO NEW.parent_id, NEW.origin FROM ${s}.session_lineage(NEW.header) l;
        RETURN NEW;
      END
      $fn$;
      ALTER TABLE ${s}.sessions ADD COLUMN parent_id text, ADD COLUMN origin text;
      UPDATE ${s}.sessions t SET parent_id = l.parent_id, origin = l.origin
        FROM ${s}.sessions x CROSS JOIN LATERAL ${s}.session_lineage(x.header) l
        WHERE t.id = x.id AND (l.parent_id IS NOT NULL OR l.origin IS NOT NULL);
      CREATE TRIGGER sessions_fill_lineage BEFORE INSERT OR UPDATE OF header ON ${s}.sessions
        FOR EACH ROW EXECUTE FUNCTION ${s}.sessions_fill_lineage();
      CREATE INDEX sessions_parent_id ON ${s}.sessions (parent_id) WHERE parent_id IS NOT NULL;
    `,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;

/** A stable 64-bit advisory lock key per schema (FNV-1a of its name). */
function lockKey(schema: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(`dsh-harness-migrate:${schema}`)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return BigInt.asIntN(64, hash);
}

/** The DO block that brings `schema` up to `upTo` (default: the latest version). */
export function migrationScript(schema: string, upTo: number = SCHEMA_VERSION): string {
  const s = `"${schema}"`;
  const steps = MIGRATIONS.filter((m) => m.version <= upTo).map((m) => `
    IF current < ${m.version} THEN
      ${m.sql(s)}
      INSERT INTO ${s}.schema_migrations (version, description) VALUES (${m.version}, '${m.description}');
    END IF;`).join("");
  return `DO $migrate$
  DECLARE current integer;
  BEGIN
    PERFORM pg_advisory_xact_lock(${lockKey(schema)});
    CREATE SCHEMA IF NOT EXISTS ${s};
    CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
      version integer PRIMARY KEY,
      description text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );
    SELECT coalesce(max(version), 0) INTO current FROM ${s}.schema_migrations;
    IF current > ${upTo} THEN
      RAISE EXCEPTION 'dsh-harness schema % is at version %, newer than %', '${schema}', current, ${upTo}
        USING ERRCODE = 'DSH01';
    END IF;${steps}
  END
  $migrate$;`;
}

/**
 * Create or upgrade the tables of `schema`; idempotent and safe to run from
 * several instances at once. Refuses a schema written by a newer build.
 */
export async function migrate(executor: PostgresExecutor, schema: string, upTo?: number): Promise<void> {
  try {
    await executor.query(migrationScript(schema, upTo));
  } catch (error) {
    if ((error as { code?: unknown })?.code === "DSH01" || /newer than/.test(String(error))) {
      throw new HarnessError(
        "STORAGE_SCHEMA_UNSUPPORTED",
        `PostgreSQL schema "${schema}" was written by a newer version of the harness`,
        { cause: error, details: { schema, supported: upTo ?? SCHEMA_VERSION } },
      );
    }
    throw new HarnessError("SESSION_WRITE_FAILED", `Could not migrate PostgreSQL schema "${schema}"`, {
      cause: error,
      details: { schema },
    });
  }
}
