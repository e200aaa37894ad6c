//! The `restage-gate.io/pending` summary: held binding changes by binding name.

use crate::template::classify::BindingDelta;

/// Folds a binding change into the pending summary. Tokens are by binding name: a binding
/// added and then removed while held cancels out; removed then added again is `~` (the pods
/// still run the old projection).
pub fn merge(previous: &str, delta: &BindingDelta) -> String {
    let mut tokens: Vec<(char, String)> = previous
        .split_whitespace()
        .filter_map(|t| {
            let mut chars = t.chars();
            let sign = chars.next().filter(|c| matches!(c, '+' | '-' | '~'))?;
            Some((sign, chars.as_str().to_string())).filter(|(_, n)| !n.is_empty())
        })
        .collect();
    let position =
        |tokens: &[(char, String)], name: &str| tokens.iter().position(|(_, n)| n == name);
    for name in &delta.added {
        match position(&tokens, name) {
            Some(i) if tokens[i].0 == '-' => tokens[i].0 = '~',
            Some(_) => {}
            None => tokens.push(('+', name.clone())),
        }
    }
    for name in &delta.removed {
        match position(&tokens, name) {
            Some(i) if tokens[i].0 == '+' => {
                tokens.remove(i);
            }
            Some(i) => tokens[i].0 = '-',
            None => tokens.push(('-', name.clone())),
        }
    }
    for name in &delta.changed {
        if position(&tokens, name).is_none() {
            tokens.push(('~', name.clone()));
        }
    }
    let mut text = String::new();
    for (i, (sign, name)) in tokens.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        text.push(*sign);
        text.push_str(name);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_folds_changes_by_binding_name() {
        let delta = |added: &[&str], removed: &[&str], changed: &[&str]| BindingDelta {
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
            changed: changed.iter().map(|s| s.to_string()).collect(),
        };
        let cases = [
            ("", delta(&["orders-db"], &[], &[]), "+orders-db"),
            (
                "+orders-db",
                delta(&["cache"], &[], &[]),
                "+orders-db +cache",
            ),
            ("+orders-db", delta(&[], &["orders-db"], &[]), ""),
            ("-orders-db", delta(&["orders-db"], &[], &[]), "~orders-db"),
            ("~orders-db", delta(&[], &["orders-db"], &[]), "-orders-db"),
            ("+orders-db", delta(&[], &[], &["orders-db"]), "+orders-db"),
            ("", delta(&["b"], &["a"], &["c"]), "+b -a ~c"),
            ("garbage +x", delta(&[], &[], &[]), "+x"),
        ];
        for (previous, delta, want) in cases {
            assert_eq!(merge(previous, &delta), want, "{previous} {delta:?}");
        }
    }
}
