//! Ordering sessions so that a parent is always stored before its branches (the `parent_id`
//! foreign key needs it when sessions are copied or imported).

use std::collections::HashSet;

/// `items` reordered so each one whose parent is among them comes after that parent; the
/// order is otherwise kept. A parent cycle (only a hand-edited database has one) keeps its
/// members in their given order, at the end.
pub(crate) fn parents_first<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    parent: impl Fn(&T) -> Option<&str>,
) -> Vec<T> {
    let ids: HashSet<String> = items.iter().map(|s| id(s).to_owned()).collect();
    let mut placed: HashSet<String> = HashSet::new();
    let mut pending = items;
    let mut out = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let before = pending.len();
        let (ready, rest): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|s| parent(s).is_none_or(|p| !ids.contains(p) || placed.contains(p)));
        placed.extend(ready.iter().map(|s| id(s).to_owned()));
        out.extend(ready);
        pending = rest;
        if pending.len() == before {
            out.extend(pending);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parents_first;

    #[test]
    fn parents_come_first_and_the_rest_keeps_its_order() {
        let items = vec![
            ("c", Some("b")),
            ("a", None),
            ("b", Some("a")),
            ("x", Some("gone")),
        ];
        let ordered = parents_first(items, |s| s.0, |s| s.1);
        let ids: Vec<&str> = ordered.iter().map(|s| s.0).collect();
        assert_eq!(ids, ["a", "x", "b", "c"]);
    }

    #[test]
    fn a_cycle_ends_up_last_in_its_given_order() {
        let items = vec![("p", Some("q")), ("q", Some("p")), ("r", None)];
        let ids: Vec<&str> = parents_first(items, |s| s.0, |s| s.1)
            .iter()
            .map(|s| s.0)
            .collect();
        assert_eq!(ids, ["r", "p", "q"]);
    }
}
