//! A schema compiled to data, and the one interpreter that checks a document against it.
//!
//! `build.rs` compiles each schema (the rpc/wire bundle, ACP v1, v2 and v2's unstable schema)
//! into a [`Program`] (`src/codegen/validators.rs`): every node a run of [`Op`]s, in the order
//! the keywords are checked, every string an offset into one text, every list a run of
//! [`Entry`]s. Nothing in a program is a pointer but its five slices, so the dynamic loader
//! has almost nothing to relocate at start, and a node costs bytes of read-only data where a
//! generated function per node cost about four times as many bytes of code.
//!
//! The interpreter reports exactly what the schema says, in jsonschema's words (the crate
//! stays the oracle of `tests/validator_differential.rs`); the runtime pieces it shares with
//! nothing else (locations, the violation sink, the messages) are [`super::check`].

use std::sync::OnceLock;

use super::check::{self as c, Loc, Sink};
use super::doc::Doc;

/// A string of a program's text: byte offset and length.
#[derive(Debug, Clone, Copy)]
pub struct Str(pub u32, pub u32);

/// A run of a program's ops or entries: first index and count.
#[derive(Debug, Clone, Copy)]
pub struct Run(pub u32, pub u32);

/// A node reference with this bit set is a node of the base program (a def the extending
/// schema states exactly as its base does).
pub const BASE: u32 = 1 << 31;

/// No node (a property the schema only names, an entry that is only a string).
pub const NONE: u32 = u32::MAX;

/// `additionalProperties: false`: members the schema does not declare are refused.
pub const CLOSED: u32 = u32::MAX - 1;

/// One item of a list: a string (a property, a tag, an option, a type's name), the node it
/// leads to ([`NONE`] when none) and, for the members of a union, the JSON types the member
/// can accept (bits of [`c::types`]).
#[derive(Debug, Clone, Copy)]
pub struct Entry(pub Str, pub u32, pub u8);

/// The integer `format`s, checked as ranges: the name and the bounds, in the order
/// `src/codegen/validators.rs` numbers them.
static FORMATS: [(&str, i128, i128); 8] = [
    ("uint8", 0, u8::MAX as i128),
    ("uint16", 0, u16::MAX as i128),
    ("uint32", 0, u32::MAX as i128),
    ("uint64", 0, u64::MAX as i128),
    ("int8", i8::MIN as i128, i8::MAX as i128),
    ("int16", i16::MIN as i128, i16::MAX as i128),
    ("int32", i32::MIN as i128, i32::MAX as i128),
    ("int64", i64::MIN as i128, i64::MAX as i128),
];

/// Whether `a` and `b`, of the same length, hold the same bytes. Names and tags are short: up
/// to sixteen bytes they are compared as two overlapping words (or halves), inline, where the
/// slices' `==` calls `memcmp`.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    debug_assert_eq!(n, b.len());
    let word = |x: &[u8], at: usize| u64::from_le_bytes(x[at..at + 8].try_into().expect("eight bytes"));
    let half = |x: &[u8], at: usize| u32::from_le_bytes(x[at..at + 4].try_into().expect("four bytes"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// One check of a node. A node's ops run in order; each reports at the node's location, and
/// the node stops as soon as the sink is done.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// Check the node (a `$ref`, or an `allOf` member that is one).
    Node(u32),
    /// The `false` schema.
    Never,
    /// `type`: the accepted types as bits, and their names for the message.
    Type(u8, Run),
    /// `const` of a string: the value and its JSON text.
    ConstStr(Str, Str),
    /// `const` of a boolean.
    ConstBool(bool),
    /// `const: null`.
    ConstNull,
    /// `const` of an integer.
    ConstInt(i64),
    /// `enum` of strings: the options and jsonschema's candidate list for the message.
    Enum(Run, Str),
    /// `minimum`: the limit and its JSON text.
    Minimum(f64, Str),
    /// `maximum`: the limit and its JSON text.
    Maximum(f64, Str),
    /// An integer `format` (an index in the formats table).
    Format(u8),
    /// `minLength`.
    MinLength(u32),
    /// `pattern`: its cell in the program's compiled patterns, and its text.
    Pattern(u32, Str),
    /// `minItems`.
    MinItems(u32),
    /// `items`: the node every item is checked against.
    Items(u32),
    /// `required`, `properties` and `additionalProperties`: the required names, the declared
    /// properties with their nodes, and what undeclared ones are checked against (a node,
    /// [`NONE`] for anything, [`CLOSED`] for nothing).
    Object(Run, Run, u32),
    /// A `oneOf`/`anyOf` whose members are told apart by a constant string property: the
    /// property, and each tag with its member's node and its place in the schema, sorted by the
    /// tag's length, then its bytes.
    Tagged(Str, Run),
    /// Any other `oneOf` (`true`) or `anyOf` (`false`): the members with the types each accepts.
    Union(bool, Run),
    /// `not`: the node, and its JSON text for the message.
    Not(u32, Str),
}

/// A compiled schema.
#[derive(Debug)]
pub struct Program {
    /// Every string the ops and entries name.
    pub text: &'static str,
    /// The ops of all nodes, each node's contiguous.
    pub ops: &'static [Op],
    /// Each node's run of ops.
    pub nodes: &'static [Run],
    /// The lists the ops name.
    pub entries: &'static [Entry],
    /// The defs and named roots, each with its node, sorted by the length of the name, then by
    /// its bytes.
    pub roots: Run,
    /// The compiled `pattern`s, each on first use.
    pub patterns: &'static [OnceLock<Option<regex::Regex>>],
    /// The program whose nodes [`BASE`] references name.
    pub base: Option<&'static Program>,
}

/// The check of one def (or named root) of a program.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    program: &'static Program,
    node: u32,
}

impl Check {
    /// Checks `v` (which sits at `at` in its document), reporting to `s`.
    pub fn run(self, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        self.program.node(self.node, v, at, s);
    }

    /// For the check of a tagged union (a node that is one `oneOf`/`anyOf` told apart by a
    /// constant string property), the check of the member `tag` selects: on an object whose
    /// tag property is that string it reports exactly what the union's check reports, without
    /// finding the member. `None` for any other check, or a tag the union lacks.
    pub fn member(self, tag: &str) -> Option<Check> {
        let program = self.program;
        let Run(first, 1) = program.nodes[self.node as usize] else { return None };
        let Op::Tagged(_, members) = program.ops[first as usize] else { return None };
        program.at(program.find(members, tag)?.1)
    }
}

impl Program {
    /// The check of the def or named root `name`.
    pub fn check(&'static self, name: &str) -> Option<Check> {
        self.at(self.find(self.roots, name)?.1)
    }

    /// The entry of the sorted run `r` (the roots, a union's tags) whose string is `text`.
    fn find(&self, r: Run, text: &str) -> Option<&'static Entry> {
        let list = self.run_of(r);
        list.binary_search_by(|e| self.order(e.0, text)).ok().map(|i| &list[i])
    }

    /// The check of a node reference (of the base program when it says so).
    fn at(&'static self, node: u32) -> Option<Check> {
        match (node & BASE != 0, self.base) {
            (true, Some(base)) => Some(Check { program: base, node: node & !BASE }),
            (true, None) => None,
            (false, _) => Some(Check { program: self, node }),
        }
    }

    #[inline]
    fn str(&self, s: Str) -> &'static str {
        &self.text[s.0 as usize..(s.0 + s.1) as usize]
    }

    /// The bytes of the string `s`.
    #[inline]
    fn bytes(&self, s: Str) -> &'static [u8] {
        &self.text.as_bytes()[s.0 as usize..(s.0 + s.1) as usize]
    }

    /// How the string `s` orders against `text` in a sorted run (the roots, a union's tags): by
    /// length, then by bytes, so most steps of a search compare two integers.
    #[inline]
    fn order(&self, s: Str, text: &str) -> std::cmp::Ordering {
        (s.1 as usize).cmp(&text.len()).then_with(|| self.bytes(s).cmp(text.as_bytes()))
    }

    /// Whether the string `s` is `text`: lengths first (most candidates differ there), then
    /// bytes, with no char-boundary checks on the way (the hot comparisons of a tag, a member
    /// name or an option).
    #[inline(always)]
    fn is(&self, s: Str, text: &str) -> bool {
        s.1 as usize == text.len() && same(self.bytes(s), text.as_bytes())
    }

    #[inline]
    fn run_of(&self, r: Run) -> &'static [Entry] {
        &self.entries[r.0 as usize..(r.0 + r.1) as usize]
    }

    fn names(&self, r: Run) -> Vec<&'static str> {
        self.run_of(r).iter().map(|e| self.str(e.0)).collect()
    }

    fn quiet(&self, node: u32, v: &Doc<'_>, at: &Loc<'_>) -> bool {
        let mut quiet = Sink::quiet();
        self.node(node, v, at, &mut quiet);
        quiet.ok()
    }

    /// Checks `v` against node `node` (of the base program when the reference says so).
    fn node(&self, node: u32, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        if node & BASE != 0 {
            if let Some(base) = self.base {
                base.node(node & !BASE, v, at, s);
            }
            return;
        }
        let Run(first, count) = self.nodes[node as usize];
        for op in &self.ops[first as usize..(first + count) as usize] {
            self.op(op, v, at, s);
            if s.done() {
                return;
            }
        }
    }

    #[inline(never)]
    fn op(&self, op: &Op, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        match *op {
            Op::Node(node) => self.node(node, v, at, s),
            Op::Never => s.fail(at, || format!("False schema does not allow {v}")),
            Op::Type(mask, names) => {
                if c::type_bits(v) & mask == 0 {
                    s.fail(at, || c::type_message(v, &self.names(names)));
                }
            }
            Op::ConstStr(value, text) => {
                if !v.as_str().is_some_and(|x| self.is(value, x)) {
                    s.fail(at, || format!("{} was expected", self.str(text)));
                }
            }
            Op::ConstBool(b) => {
                if v.as_bool() != Some(b) {
                    s.fail(at, || format!("{b} was expected"));
                }
            }
            Op::ConstNull => {
                if !v.is_null() {
                    s.fail(at, || "null was expected".to_owned());
                }
            }
            Op::ConstInt(n) => {
                if v.as_f64() != Some(n as f64) {
                    s.fail(at, || format!("{n} was expected"));
                }
            }
            Op::Enum(options, candidates) => {
                let x = v.as_str();
                if !x.is_some_and(|x| self.run_of(options).iter().any(|e| self.is(e.0, x))) {
                    s.fail(at, || c::enum_message(v, self.str(candidates)));
                }
            }
            Op::Minimum(limit, text) => {
                if v.as_number().is_some_and(|n| c::below(n, limit)) {
                    s.fail(at, || format!("{v} is less than the minimum of {}", self.str(text)));
                }
            }
            Op::Maximum(limit, text) => {
                if v.as_number().is_some_and(|n| c::above(n, limit)) {
                    s.fail(at, || format!("{v} is greater than the maximum of {}", self.str(text)));
                }
            }
            Op::Format(index) => {
                let (name, lo, hi) = FORMATS[usize::from(index)];
                if v.as_number().is_some_and(|n| !c::fits(n, lo, hi)) {
                    s.fail(at, || format!("{v} is not a \"{name}\""));
                }
            }
            Op::MinLength(n) => {
                // A string of at least 4n bytes has at least n characters: count only below that.
                if v.as_str().is_some_and(|x| x.len() < 4 * n as usize && x.chars().count() < n as usize) {
                    s.fail(at, || format!("{v} is shorter than {n} {}", if n == 1 { "character" } else { "characters" }));
                }
            }
            Op::Pattern(index, pattern) => {
                if let Some(x) = v.as_str() {
                    if !c::matches(&self.patterns[index as usize], self.str(pattern), x) {
                        s.fail(at, || format!("{v} does not match \"{}\"", self.str(pattern)));
                    }
                }
            }
            Op::MinItems(n) => {
                if v.as_array().is_some_and(|a| a.len() < n as usize) {
                    s.fail(at, || format!("{v} has less than {n} {}", if n == 1 { "item" } else { "items" }));
                }
            }
            Op::Items(node) => {
                if let Some(items) = v.as_array() {
                    for (i, x) in items.iter().enumerate() {
                        self.node(node, x, &at.index(i), s);
                        if s.done() {
                            return;
                        }
                    }
                }
            }
            Op::Object(required, properties, additional) => self.object(required, properties, additional, v, at, s),
            Op::Tagged(property, members) => self.tagged(property, members, v, at, s),
            Op::Union(one, members) => self.union(one, members, v, at, s),
            Op::Not(node, text) => {
                if self.quiet(node, v, at) {
                    s.fail(at, || format!("{} is not allowed for {v}", self.str(text)));
                }
            }
        }
    }

    #[inline(never)]
    fn object(&self, required: Run, properties: Run, additional: u32, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        let Some(members) = v.as_object() else { return };
        for name in self.run_of(required) {
            if !members.iter().any(|(key, _)| self.is(name.0, key)) {
                let name = self.str(name.0);
                s.fail(&at.key(name), || c::required_message(name));
                if s.done() {
                    return;
                }
            }
        }
        let declared = self.run_of(properties);
        for (key, x) in members {
            let node = match declared.iter().find(|e| self.is(e.0, key)) {
                Some(e) => e.1,
                None if additional == CLOSED => {
                    s.fail(&at.key(key), || c::unknown_field_message(key, &self.names(properties)));
                    if s.done() {
                        return;
                    }
                    continue;
                }
                None => additional,
            };
            if node != NONE {
                self.node(node, x, &at.key(key), s);
                if s.done() {
                    return;
                }
            }
        }
    }

    #[inline(never)]
    fn tagged(&self, property: Str, members: Run, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        let Some(object) = v.as_object() else {
            s.fail(at, || c::type_message(v, &["object"]));
            return;
        };
        let property = self.str(property);
        match object.get(property) {
            Some(Doc::String(tag)) => {
                match self.find(members, tag) {
                    Some(member) => self.node(member.1, v, at, s),
                    None => s.fail(&at.key(property), || {
                        // The tags in the schema's order (each entry's place is its third field).
                        let mut in_order: Vec<&Entry> = self.run_of(members).iter().collect();
                        in_order.sort_by_key(|e| e.2);
                        c::unknown_tag_message(property, tag, &in_order.iter().map(|e| self.str(e.0)).collect::<Vec<_>>())
                    }),
                }
            }
            Some(other) => s.fail(&at.key(property), || c::type_message(other, &["string"])),
            None => s.fail(&at.key(property), || c::required_message(property)),
        }
    }

    #[inline(never)]
    fn union(&self, one: bool, members: Run, v: &Doc<'_>, at: &Loc<'_>, s: &mut Sink) {
        let members = self.run_of(members);
        // A member whose types exclude the value's cannot accept it: it is not tried.
        let bits = c::type_bits(v);
        let mut valid = 0usize;
        for member in members {
            if member.2 & bits != 0 && self.quiet(member.1, v, at) {
                valid += 1;
                if !one || valid > 1 {
                    break;
                }
            }
        }
        let keyword = if one { "oneOf" } else { "anyOf" };
        if valid == 0 {
            // When only one member accepts the value's JSON type, its errors say what is wrong.
            let mut fit = members.iter().filter(|m| m.2 & bits != 0);
            match (fit.next(), fit.next()) {
                (Some(only), None) => self.node(only.1, v, at, s),
                _ => s.fail(at, || format!("{v} is not valid under any of the schemas listed in the '{keyword}' keyword")),
            }
        } else if one && valid > 1 {
            s.fail(at, || format!("{v} is valid under more than one of the schemas listed in the '{keyword}' keyword"));
        }
    }
}
