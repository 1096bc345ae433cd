//! reprolab-store
