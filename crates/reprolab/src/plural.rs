//! Counts in words for people: `1 worker`, `2 workers` (a `1 workers` reads as a bug).

/// `n` and `noun`, with an `s` unless `n` is 1. For nouns whose plural is not `noun + s`, use
/// [`count_as`].
pub fn count(n: usize, noun: &str) -> String {
    count_as(n, noun, &format!("{noun}s"))
}

/// `n` and `one` or `many`.
pub fn count_as(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(count(1, "worker"), "1 worker");
        assert_eq!(count(2, "worker"), "2 workers");
        assert_eq!(count(0, "run"), "0 runs");
        assert_eq!(count_as(1, "criterion", "criteria"), "1 criterion");
        assert_eq!(count_as(3, "criterion", "criteria"), "3 criteria");
    }
}
