-- Leasehold PostgreSQL backend: schema version 1.
--
-- ${schema} is the schema the backend works in (the URI's schema=, default leasehold). The backend
-- applies this file itself on first use unless its URI says create-schema=false; to apply it with a
-- migration tool instead, replace ${schema} (Flyway and Liquibase placeholders use this syntax) and
-- run it as the schema's owner. Every statement may run again: applying it twice changes nothing.
-- docs/postgresql.md describes the tables, the functions and the grants a least-privileged user
-- needs.

CREATE SCHEMA IF NOT EXISTS ${schema};

CREATE TABLE IF NOT EXISTS ${schema}.schema_version (
  version    integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row per backend (process) and TTL: the one row a heartbeat renews, however many leases the
-- process holds with that TTL. expires_at is the database's clock at the last renewal's receipt
-- plus ttl_ms; no application clock is ever written here or compared with it.
CREATE TABLE IF NOT EXISTS ${schema}.sessions (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  owner      text NOT NULL,
  ttl_ms     bigint NOT NULL CHECK (ttl_ms > 0),
  expires_at timestamptz NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row per lease name, never deleted by the backend: the fencing counter (token only grows)
-- and the current tenure (holder NULL when free). It is the guard that outlives a DELETE of the
-- name's row in leases: the name stays blocked until its holder released it or its session expired.
CREATE TABLE IF NOT EXISTS ${schema}.names (
  name       text PRIMARY KEY,
  token      bigint NOT NULL,
  holder     text,
  request_id bigint,
  session_id bigint REFERENCES ${schema}.sessions (id) ON DELETE RESTRICT
);
CREATE INDEX IF NOT EXISTS names_session ON ${schema}.names (session_id);

-- One row per held lease: the record operators read, and delete to revoke a tenure.
CREATE TABLE IF NOT EXISTS ${schema}.leases (
  name        text PRIMARY KEY,
  holder      text NOT NULL,
  request_id  bigint NOT NULL,
  token       bigint NOT NULL,
  session_id  bigint NOT NULL REFERENCES ${schema}.sessions (id) ON DELETE RESTRICT,
  acquired_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_session ON ${schema}.leases (session_id);

-- Keys attached to a tenure: written only while it is the name's current, live tenure, and
-- deleted in the same transaction that ends it (release, abandon, the next grant).
CREATE TABLE IF NOT EXISTS ${schema}.attached (
  name  text NOT NULL,
  key   text NOT NULL,
  value text NOT NULL,
  token bigint NOT NULL,
  PRIMARY KEY (name, key)
);

-- For operators: the leases that are live now by the database's clock.
CREATE OR REPLACE VIEW ${schema}.held AS
  SELECT l.name, l.holder, l.token, l.acquired_at, s.expires_at
  FROM ${schema}.leases l JOIN ${schema}.sessions s ON s.id = l.session_id
  WHERE s.expires_at > clock_timestamp();

-- A new session, live for ttl_ms from now. Sessions that expired more than a day ago and that no
-- name refers to any more are removed on the way.
CREATE OR REPLACE FUNCTION ${schema}.open_session(p_owner text, p_ttl_ms bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
BEGIN
  DELETE FROM ${schema}.sessions s
   WHERE s.expires_at < clock_timestamp() - interval '1 day'
     AND NOT EXISTS (SELECT 1 FROM ${schema}.names n WHERE n.session_id = s.id)
     AND NOT EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.session_id = s.id);
  INSERT INTO ${schema}.sessions (owner, ttl_ms, expires_at)
  VALUES (p_owner, p_ttl_ms, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- The heartbeat: extends the session by its TTL from now, unless it has expired already (an
-- expired session never comes back: someone may have taken its names), and lists the leases
-- recorded on it, so that its holder learns of a deleted lease row at this heartbeat at the latest.
CREATE OR REPLACE FUNCTION ${schema}.heartbeat(
    p_session bigint,
    OUT r_alive boolean, OUT r_names text[], OUT r_tokens bigint[], OUT r_holders text[])
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ${schema}.sessions SET expires_at = clock_timestamp() + ttl_ms * interval '1 millisecond'
   WHERE id = p_session AND expires_at > clock_timestamp();
  r_alive := FOUND;
  IF r_alive THEN
    SELECT coalesce(array_agg(l.name), '{}'), coalesce(array_agg(l.token), '{}'),
           coalesce(array_agg(l.holder), '{}')
      INTO r_names, r_tokens, r_holders
      FROM ${schema}.leases l WHERE l.session_id = p_session;
  END IF;
END $$;

-- Acquire: one call, one transaction. Row locks order everything: first the name's row (every
-- acquire and release of a name takes it first), then the sessions involved, in id order (so two
-- acquires never wait for each other in a cycle). A holder's expiry is judged only after its
-- session row is locked, by the database's clock; taking over an expired session writes its row,
-- so that a heartbeat of it that was already under way re-checks its expiry and fails.
-- r_outcome: 'acquired' (r_token is the tenure's token), 'held' (r_holder holds it), or
-- 'no-session' (p_session has expired or is gone: open a new one).
CREATE OR REPLACE FUNCTION ${schema}.acquire(
    p_name text, p_holder text, p_request_id bigint, p_session bigint,
    OUT r_outcome text, OUT r_token bigint, OUT r_holder text)
LANGUAGE plpgsql AS $$
DECLARE
  n ${schema}.names%ROWTYPE;
  v_lease ${schema}.leases%ROWTYPE;
  v_mine timestamptz;
  v_other timestamptz;
BEGIN
  -- The name's first use; or its row was deleted by hand: rebuilt from its lease row, if any, so
  -- that neither the guard nor the counter is lost while a lease row still says who holds it.
  INSERT INTO ${schema}.names (name, token, holder, request_id, session_id)
  SELECT p_name, coalesce(l.token, 0), l.holder, l.request_id, l.session_id
    FROM (SELECT 1) one LEFT JOIN ${schema}.leases l ON l.name = p_name
  ON CONFLICT (name) DO NOTHING;
  SELECT * INTO n FROM ${schema}.names WHERE name = p_name FOR UPDATE;

  PERFORM 1 FROM ${schema}.sessions s WHERE s.id IN (p_session, n.session_id)
    ORDER BY s.id FOR NO KEY UPDATE;
  SELECT s.expires_at INTO v_mine FROM ${schema}.sessions s WHERE s.id = p_session;
  IF v_mine IS NULL OR v_mine <= clock_timestamp() THEN
    r_outcome := 'no-session';
    RETURN;
  END IF;

  IF n.holder = p_holder THEN
    IF n.request_id = p_request_id THEN
      -- A retry of the request that made the current tenure: the same tenure, if its lease row is
      -- still there on this session; if the row was deleted, the tenure was revoked and this
      -- request does not get it back (a later acquire call, with a greater request id, does).
      SELECT * INTO v_lease FROM ${schema}.leases l WHERE l.name = p_name;
      IF v_lease.token = n.token AND v_lease.session_id = p_session THEN
        UPDATE ${schema}.sessions
           SET expires_at = clock_timestamp() + ttl_ms * interval '1 millisecond'
         WHERE id = p_session;
        r_outcome := 'acquired';
        r_token := n.token;
        RETURN;
      END IF;
      r_outcome := 'held';
      r_holder := n.holder;
      RETURN;
    ELSIF n.request_id > p_request_id THEN
      -- A late copy of an older request of this holder: change nothing.
      r_outcome := 'held';
      r_holder := n.holder;
      RETURN;
    END IF;
    -- A tenure this holder gave up on: replaced below by a new one.
  ELSIF n.holder IS NOT NULL THEN
    SELECT s.expires_at INTO v_other FROM ${schema}.sessions s WHERE s.id = n.session_id;
    IF v_other > clock_timestamp() THEN
      r_outcome := 'held';
      r_holder := n.holder;
      RETURN;
    END IF;
    -- Expired by the database's clock: the write makes a concurrent heartbeat of it re-check.
    UPDATE ${schema}.sessions SET expires_at = expires_at WHERE id = n.session_id;
  END IF;

  UPDATE ${schema}.sessions SET expires_at = clock_timestamp() + ttl_ms * interval '1 millisecond'
   WHERE id = p_session;
  UPDATE ${schema}.names
     SET token = n.token + 1, holder = p_holder, request_id = p_request_id, session_id = p_session
   WHERE name = p_name;
  INSERT INTO ${schema}.leases (name, holder, request_id, token, session_id, acquired_at)
  VALUES (p_name, p_holder, p_request_id, n.token + 1, p_session, clock_timestamp())
  ON CONFLICT (name) DO UPDATE
    SET holder = EXCLUDED.holder, request_id = EXCLUDED.request_id, token = EXCLUDED.token,
        session_id = EXCLUDED.session_id, acquired_at = EXCLUDED.acquired_at;
  DELETE FROM ${schema}.attached a WHERE a.name = p_name;
  -- Observers hear of it at commit, in commit order; the token tells them whether they missed one.
  -- Payload: '<type> <token> <length of name> <name><holder>' (no quoting needed).
  PERFORM pg_notify('${schema}_leases',
      format('acquired %s %s %s%s', n.token + 1, length(p_name), p_name, p_holder));
  r_outcome := 'acquired';
  r_token := n.token + 1;
END $$;

-- Release: ends the tenure (holder, token) if it is the current one, whether or not its lease
-- row is still there (after a DELETE by an operator, this is the holder saying it stopped, which
-- frees the name). Anything else is left alone: a late or repeated release never ends a newer
-- tenure. Returns whether the name was freed.
CREATE OR REPLACE FUNCTION ${schema}.release(p_name text, p_holder text, p_token bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_freed boolean;
BEGIN
  PERFORM 1 FROM ${schema}.names WHERE name = p_name FOR UPDATE;
  UPDATE ${schema}.names SET holder = NULL, request_id = NULL, session_id = NULL
   WHERE name = p_name AND holder = p_holder AND token = p_token;
  v_freed := FOUND;
  DELETE FROM ${schema}.leases WHERE name = p_name AND holder = p_holder AND token = p_token;
  IF v_freed THEN
    DELETE FROM ${schema}.attached a WHERE a.name = p_name;
    PERFORM pg_notify('${schema}_leases',
        format('released %s %s %s%s', p_token, length(p_name), p_name, p_holder));
  END IF;
  RETURN v_freed;
END $$;

-- Abandon: as release, for the tenure a given acquire request made, if it made one (its holder
-- never learned the outcome).
CREATE OR REPLACE FUNCTION ${schema}.abandon(p_name text, p_holder text, p_request_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_token bigint;
BEGIN
  PERFORM 1 FROM ${schema}.names WHERE name = p_name FOR UPDATE;
  UPDATE ${schema}.names SET holder = NULL, request_id = NULL, session_id = NULL
   WHERE name = p_name AND holder = p_holder AND request_id = p_request_id
  RETURNING token INTO v_token;
  DELETE FROM ${schema}.leases
   WHERE name = p_name AND holder = p_holder AND request_id = p_request_id;
  IF v_token IS NOT NULL THEN
    DELETE FROM ${schema}.attached a WHERE a.name = p_name;
    PERFORM pg_notify('${schema}_leases',
        format('released %s %s %s%s', v_token, length(p_name), p_name, p_holder));
  END IF;
  RETURN v_token IS NOT NULL;
END $$;

-- Attach: writes key = value for the tenure (holder, token) if and only if it is the name's
-- current tenure, its lease row is still there (not revoked) and its session lives by the
-- database's clock. The name's row is locked (shared), so no release or grant runs meanwhile.
CREATE OR REPLACE FUNCTION ${schema}.attach(
    p_name text, p_holder text, p_token bigint, p_key text, p_value text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM ${schema}.names n
   WHERE n.name = p_name AND n.holder = p_holder AND n.token = p_token FOR SHARE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM ${schema}.leases l JOIN ${schema}.sessions s ON s.id = l.session_id
   WHERE l.name = p_name AND l.holder = p_holder AND l.token = p_token
     AND s.expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  INSERT INTO ${schema}.attached (name, key, value, token) VALUES (p_name, p_key, p_value, p_token)
  ON CONFLICT (name, key) DO UPDATE SET value = EXCLUDED.value, token = EXCLUDED.token;
  RETURN true;
END $$;

-- Read: the name's counter, its current tenure and that tenure's attached keys. r_state is
-- 'held' (live by the database's clock; r_remaining_ms until its session expires unless
-- renewed), 'expired' (its session expired, nobody has taken the name yet) or 'free'.
CREATE OR REPLACE FUNCTION ${schema}.read_lease(
    p_name text, OUT r_state text, OUT r_holder text, OUT r_token bigint,
    OUT r_remaining_ms bigint, OUT r_keys text[], OUT r_values text[])
LANGUAGE plpgsql AS $$
DECLARE
  n ${schema}.names%ROWTYPE;
  v_expires timestamptz;
BEGIN
  SELECT * INTO n FROM ${schema}.names WHERE name = p_name;
  r_token := coalesce(n.token, 0);
  r_keys := '{}';
  r_values := '{}';
  IF n.holder IS NULL THEN
    r_state := 'free';
    RETURN;
  END IF;
  r_holder := n.holder;
  SELECT s.expires_at INTO v_expires FROM ${schema}.sessions s WHERE s.id = n.session_id;
  IF v_expires IS NULL OR v_expires <= clock_timestamp() THEN
    r_state := 'expired';
    RETURN;
  END IF;
  r_state := 'held';
  r_remaining_ms := ceil(extract(epoch FROM v_expires - clock_timestamp()) * 1000)::bigint;
  SELECT coalesce(array_agg(a.key ORDER BY a.key), '{}'), coalesce(array_agg(a.value ORDER BY a.key), '{}')
    INTO r_keys, r_values
    FROM ${schema}.attached a WHERE a.name = p_name AND a.token = n.token;
END $$;

-- Closing a backend: its leases were released; the session ends now. Its row goes if nothing
-- refers to it any more, else it is expired at once (what still refers to it is no longer held).
CREATE OR REPLACE FUNCTION ${schema}.close_session(p_session bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ${schema}.sessions SET expires_at = clock_timestamp() WHERE id = p_session;
  DELETE FROM ${schema}.sessions s WHERE s.id = p_session
     AND NOT EXISTS (SELECT 1 FROM ${schema}.names n WHERE n.session_id = s.id)
     AND NOT EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.session_id = s.id);
END $$;

INSERT INTO ${schema}.schema_version (version) VALUES (1) ON CONFLICT DO NOTHING;
