//! The API server's modules depend one way. This test reads the crate's sources, finds
//! every module a file names (`crate::a::b`, `super::b`, `self::b`, `use crate::{a, b}`),
//! and checks that among the children of each module the references form no cycle, and
//! that the layers go machinery → storage → registry → auth → admission → endpoints → server.
//!
//! A reference inside a child module counts for that child: `registry/table/pod.rs`
//! naming `crate::registry::catalog` is an edge `table → catalog` among the children of
//! `registry`, and an edge that stays inside `registry` at the top level.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level layers, lowest first: each may name only the ones before it.
const LAYERS: &[&str] = &[
    "machinery",
    "storage",
    "registry",
    "auth",
    "admission",
    "endpoints",
    "server",
];

/// A source file and the module path it defines (`["registry", "table"]`).
struct Source {
    file: PathBuf,
    module: Vec<String>,
    text: String,
}

fn sources() -> Vec<Source> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    assert!(out.len() > 20, "found only {} source files", out.len());
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let file = module.pop().expect("file name");
            match file.as_str() {
                "lib.rs" | "mod.rs" => {}
                f => module.push(f.trim_end_matches(".rs").to_string()),
            }
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push(Source {
                file: p,
                module,
                text,
            });
        }
    }
}

/// The code of a file without comments (doc links name modules without using them).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers of a path that starts at `start` in `s`: `a::b::{c, d}` gives
/// `[[a, b, c], [a, b, d]]` (one level of braces is enough for our imports).
fn paths_at(s: &str, start: usize) -> Vec<Vec<String>> {
    let rest = &s[start..];
    let mut segs = Vec::new();
    let mut i = 0;
    let b = rest.as_bytes();
    loop {
        let id_end = rest[i..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(rest.len(), |n| i + n);
        if id_end > i {
            segs.push(rest[i..id_end].to_string());
        }
        i = id_end;
        if rest[i..].starts_with("::{") {
            let close = rest[i..].find('}').map_or(rest.len(), |n| i + n);
            return rest[i + 3..close]
                .split(',')
                .map(|item| {
                    let mut p = segs.clone();
                    p.extend(
                        item.trim()
                            .split("::")
                            .map(|x| x.split_whitespace().next().unwrap_or("").to_string())
                            .filter(|x| !x.is_empty()),
                    );
                    p
                })
                .collect();
        }
        if rest[i..].starts_with("::")
            && b.get(i + 2)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            i += 2;
            continue;
        }
        return vec![segs];
    }
}

/// Absolute module paths a file names, resolved from `crate::`, `super::` and `self::`.
fn references(src: &Source) -> Vec<Vec<String>> {
    let text = code(&src.text);
    let mut out = Vec::new();
    let is_mod_rs = src
        .file
        .file_name()
        .is_some_and(|f| f == "mod.rs" || f == "lib.rs");
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", {
            // the parent of the file's module
            let mut m = src.module.clone();
            m.pop();
            m
        }),
        ("self::", src.module.clone()),
    ] {
        let mut from = 0;
        while let Some(pos) = text[from..].find(prefix) {
            let at = from + pos;
            from = at + prefix.len();
            let before = text[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for p in paths_at(&text, at + prefix.len()) {
                let mut full = base.clone();
                full.extend(p);
                out.push(full);
            }
        }
    }
    let _ = is_mod_rs;
    out
}

/// Every module that is a directory or file: parent path → child names.
fn tree(srcs: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut t: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for s in srcs {
        for i in 0..s.module.len() {
            t.entry(s.module[..i].to_vec())
                .or_default()
                .insert(s.module[i].clone());
        }
    }
    t
}

/// A cycle in `edges` (node → successors), if any.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|x| x == m).unwrap_or(0);
                    let mut c = stack[start..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn modules_depend_one_way() {
    let srcs = sources();
    let tree = tree(&srcs);
    // sibling edges, per parent module, with one example file per edge
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut example: BTreeMap<(Vec<String>, String, String), String> = BTreeMap::new();
    for s in &srcs {
        for r in references(s) {
            // the deepest common parent of the file's module and the reference
            let common = s.module.iter().zip(&r).take_while(|(a, b)| a == b).count();
            if common >= s.module.len() || common >= r.len() {
                continue; // a reference to an ancestor or a descendant
            }
            let parent = s.module[..common].to_vec();
            let (from, to) = (s.module[common].clone(), r[common].clone());
            // only references to modules (not to items of the parent) count
            if !tree.get(&parent).is_some_and(|c| c.contains(&to)) {
                continue;
            }
            graphs
                .entry(parent.clone())
                .or_default()
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
            example
                .entry((parent, from, to))
                .or_insert_with(|| format!("{} names {}", s.file.display(), r.join("::")));
        }
    }
    let mut problems = Vec::new();
    for (parent, edges) in &graphs {
        if let Some(cycle) = find_cycle(edges) {
            let shown: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    example
                        .get(&(parent.clone(), w[0].clone(), w[1].clone()))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            problems.push(format!(
                "cycle among the children of crate::{}: {}\n    {}",
                parent.join("::"),
                cycle.join(" -> "),
                shown.join("\n    ")
            ));
        }
    }
    let top = graphs.get(&Vec::new()).cloned().unwrap_or_default();
    for (from, tos) in &top {
        for to in tos {
            let (f, t) = (
                LAYERS.iter().position(|l| l == from),
                LAYERS.iter().position(|l| l == to),
            );
            if let (Some(f), Some(t)) = (f, t) {
                if t > f {
                    problems.push(format!(
                        "layer {from} names the higher layer {to}: {}",
                        example
                            .get(&(Vec::new(), from.clone(), to.clone()))
                            .cloned()
                            .unwrap_or_default()
                    ));
                }
            }
        }
    }
    for m in tree.get(&Vec::new()).into_iter().flatten() {
        assert!(
            LAYERS.contains(&m.as_str()),
            "top-level module {m} is in no layer; add it to LAYERS or move it into one"
        );
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            e.entry(a.to_string()).or_default().insert(b.to_string());
        }
        e
    };
    assert_eq!(find_cycle(&edges(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(
        find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let text =
        "use crate::registry::{catalog::ResourceDef, table};\nlet x = super::codec::present();";
    assert_eq!(
        paths_at(text, text.find("crate::").unwrap() + 7),
        vec![
            vec![
                "registry".to_string(),
                "catalog".into(),
                "ResourceDef".into()
            ],
            vec!["registry".to_string(), "table".into()],
        ]
    );
}
