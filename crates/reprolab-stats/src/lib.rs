//! reprolab-stats
