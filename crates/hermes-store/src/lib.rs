//! Session storage for hermes: `state.db` through sqlx and its migrations (arrives with the session-store work; nothing lives here yet).
