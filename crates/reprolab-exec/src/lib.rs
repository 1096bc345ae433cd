//! reprolab-exec
