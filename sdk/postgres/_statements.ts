// The SQL of postgresStorage, one atomic statement per operation.
//
// Writes check the writer lease in the same statement: `held` reads the live
// lease row FOR SHARE, so a hand-over (which updates that row) either waits
// for the write to commit or, if it committed first, makes the re-checked row
// no longer match the writer's token. Without a token, a write is allowed only
// while no live lease exists. The session row's next_seq is compared and
// advanced by an UPDATE, whose row lock serialises racing appends: the loser
// re-reads the row, no longer matches the expected seq, and inserts nothing.
// Append, the hot path, does all this in the function append_events()
// (migration 3), whose plans the server keeps per connection: sent as this
// large statement, parsing and planning it took most of a one-event append.
// Its call is also given a statement name, which a pg Pool prepares once per
// connection (see toPostgresExecutor).

/** The statements of one schema. */
export interface Statements {
  readonly create: string;
  readonly append: string;
  /** The name `append` may be prepared under on a connection: it changes with the text. */
  readonly appendName: string;
  readonly page: string;
  readonly loadRows: string;
  readonly stat: string;
  readonly list: string;
  /** The id and header of every session down the subagent children of $1 (see migration 6). */
  readonly descendants: string;
  readonly delete: string;
  readonly acquire: string;
  readonly renew: string;
  readonly release: string;
  /** Whether a live lease is held on a session ($1 id). */
  readonly leaseHeld: string;
  readonly channel: string;
}

/**
 * The most bytes of event text a page read joins before it stops (it always holds one event): far under V8's longest
 * string, large enough that paging costs a load next to nothing.
 */
export const PAGE_BYTES = 64 * 1024 * 1024;

/** The most events of one page of a load. */
export const LOAD_PAGE_EVENTS = 50_000;

/** FNV-1a (32 bits) of a text, in hex. */
function textHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

export function statements(schema: string): Statements {
  const s = `"${schema}"`;
  const channel = `${schema}_appends`;
  // $1 session id, $3 writer token or null.
  const lease = `held AS (
      SELECT token FROM ${s}.session_writers
      WHERE session_id = $1 AND expires_at > clock_timestamp() FOR SHARE
    ), lease AS (
      SELECT CASE WHEN $3::text IS NULL THEN NOT EXISTS (SELECT 1 FROM held)
        ELSE EXISTS (SELECT 1 FROM held WHERE token = $3::text) END AS ok
    )`;
  const append = `SELECT applied, lease_ok, stored FROM ${s}.append_events($1::text, $2::bigint, $3::text, $4::text[],
        $5::text[], $6::bigint, $7::bigint, '${channel}')`;
  return {
    channel,
    // $1 id, $2 header, $3 token, $4 types, $5 events, $6 now, $7 bytes, $8 created_at
    create: `WITH ${lease}, ins AS (
        INSERT INTO ${s}.sessions (id, header, created_at, next_seq, size, updated_at)
        SELECT $1, $2, $8::bigint, cardinality($4::text[]), $7::bigint, $6::bigint WHERE (SELECT ok FROM lease)
        ON CONFLICT (id) DO NOTHING
        RETURNING next_seq
      ), events AS (
        INSERT INTO ${s}.session_events (session_id, seq, type, event)
        SELECT $1, u.i - 1, u.t, u.e FROM ins, unnest($4::text[], $5::text[]) WITH ORDINALITY AS u(t, e, i)
        RETURNING 1
      ), note AS (
        SELECT pg_notify('${channel}', ins.next_seq || ' ' || $1) FROM ins WHERE ins.next_seq > 0
      )
      SELECT (SELECT next_seq::float8 FROM ins) AS applied, (SELECT ok FROM lease) AS lease_ok,
        (SELECT count(*)::float8 FROM events) + (SELECT count(*)::float8 FROM note) AS written`,
    // $1 id, $2 expected seq, $3 token, $4 types, $5 events, $6 now, $7 bytes (see migration 3)
    append,
    appendName: `dsh_append_${textHash(append)}`,
    // One page of a log, for a load or a live tail: the header and next_seq with the events from seq $2, below $3
    // (null: next_seq), at most $4 of them, joined into one JSON array text while the bytes before each event are
    // under $5 (so the first is always there). The whole log as one text would pass V8's longest string (~512 MiB),
    // which the driver fails on in its socket handler, killing the process. The header lets a reader of several
    // pages tell that the session was deleted and created again between two of them.
    // $1 id, $2 from seq, $3 bound or null, $4 most events, $5 byte budget
    page: `SELECT s.header, s.next_seq::float8 AS next_seq, p.events, p.last_seq
      FROM ${s}.sessions s LEFT JOIN LATERAL (
        SELECT string_agg(w.event, ',' ORDER BY w.seq) AS events, max(w.seq)::float8 AS last_seq FROM (
          SELECT x.seq, x.event, sum(octet_length(x.event)) OVER (ORDER BY x.seq) - octet_length(x.event) AS before
          FROM (
            SELECT e.seq, e.event FROM ${s}.session_events e
            WHERE e.session_id = s.id AND e.seq >= $2::bigint AND e.seq < coalesce($3::bigint, s.next_seq)
            ORDER BY e.seq LIMIT $4::int
          ) x
        ) w WHERE w.before < $5::bigint
      ) p ON true
      WHERE s.id = $1`,
    // Row by row, to name the bad row when a page's joined text does not parse. $1 id, $2 from seq, $3 to (exclusive)
    loadRows: `SELECT seq::float8 AS seq, event FROM ${s}.session_events
      WHERE session_id = $1 AND seq >= $2::bigint AND seq < $3::bigint ORDER BY seq`,
    stat: `SELECT header, next_seq::float8 AS next_seq, size::float8 AS size, updated_at::float8 AS updated_at
      FROM ${s}.sessions WHERE id = $1`,
    list: `SELECT header FROM ${s}.sessions ORDER BY created_at, id`,
    // Level by level down the index on parent_id: the children of $1, then theirs. UNION (not UNION ALL) drops a row
    // met again, so headers naming each other as parents end the recursion. The caller keeps the readable headers.
    descendants: `WITH RECURSIVE tree (id, header) AS (
        SELECT id, header FROM ${s}.sessions WHERE parent_id = $1 AND origin = 'subagent'
        UNION
        SELECT c.id, c.header FROM tree t JOIN ${s}.sessions c ON c.parent_id = t.id AND c.origin = 'subagent'
      )
      SELECT id, header FROM tree`,
    // $1 id, $2 token or null
    delete: `SELECT ${s}.delete_session($1, $2::text) AS outcome`,
    // $1 id, $2 token, $3 lease ms
    acquire: `INSERT INTO ${s}.session_writers AS w (session_id, token, fence, expires_at)
      VALUES ($1, $2, 1, clock_timestamp() + $3::float8 * interval '1 millisecond')
      ON CONFLICT (session_id) DO UPDATE
        SET token = excluded.token, fence = w.fence + 1, expires_at = excluded.expires_at
        WHERE w.expires_at <= clock_timestamp()
      RETURNING fence::float8 AS fence`,
    renew: `UPDATE ${s}.session_writers SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
      WHERE session_id = $1 AND token = $2 AND expires_at > clock_timestamp()
      RETURNING fence::float8 AS fence`,
    // Keeps the row (and its fence counter): the lease is marked expired.
    release: `UPDATE ${s}.session_writers SET expires_at = '-infinity'
      WHERE session_id = $1 AND token = $2 RETURNING 1 AS released`,
    leaseHeld: `SELECT EXISTS (SELECT 1 FROM ${s}.session_writers
      WHERE session_id = $1 AND expires_at > clock_timestamp()) AS held`,
  };
}
