//! A breaking-change checker for two compiled descriptor sets, with the rules of
//! `buf breaking`'s WIRE_JSON category that matter to fleetgate.v1: what a
//! client or spoke built from the old `.proto` files sends and expects must
//! still mean the same to a server built from the new ones, in binary and in
//! protobuf JSON. Appending (new messages, fields, values, RPCs) is fine;
//! removing or changing anything that existed is not, unless a removed field's
//! or value's number is reserved.

use std::collections::BTreeMap;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorSet,
    ServiceDescriptorProto,
};

/// One breaking change: the element (`fleetgate.v1.Hello.cluster`) and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Breaking {
    pub element: String,
    pub change: String,
}

impl std::fmt::Display for Breaking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.element, self.change)
    }
}

/// Every breaking change from `old` to `new`, sorted.
pub fn breaking_changes(old: &FileDescriptorSet, new: &FileDescriptorSet) -> Vec<Breaking> {
    let (old_i, new_i) = (Index::of(old), Index::of(new));
    let mut out = Vec::new();
    let mut report = |element: &str, change: String| {
        out.push(Breaking {
            element: element.to_owned(),
            change,
        })
    };
    for (name, old_m) in &old_i.messages {
        match new_i.messages.get(name) {
            None => report(name, "message removed".into()),
            Some(new_m) => compare_message(name, old_m, new_m, &mut report),
        }
    }
    for (name, old_e) in &old_i.enums {
        match new_i.enums.get(name) {
            None => report(name, "enum removed".into()),
            Some(new_e) => compare_enum(name, old_e, new_e, &mut report),
        }
    }
    for (name, old_s) in &old_i.services {
        match new_i.services.get(name) {
            None => report(name, "service removed".into()),
            Some(new_s) => compare_service(name, old_s, new_s, &mut report),
        }
    }
    out.sort();
    out
}

/// Messages, enums and services by full name (`fleetgate.v1.Hello`, nested
/// ones as `fleetgate.v1.Outer.Inner`).
#[derive(Default)]
struct Index<'a> {
    messages: BTreeMap<String, &'a DescriptorProto>,
    enums: BTreeMap<String, &'a EnumDescriptorProto>,
    services: BTreeMap<String, &'a ServiceDescriptorProto>,
}

impl<'a> Index<'a> {
    fn of(set: &'a FileDescriptorSet) -> Self {
        let mut index = Index::default();
        for file in &set.file {
            let package = file.package();
            for m in &file.message_type {
                index.message(package, m);
            }
            for e in &file.enum_type {
                index.enums.insert(join(package, e.name()), e);
            }
            for s in &file.service {
                index.services.insert(join(package, s.name()), s);
            }
        }
        index
    }

    fn message(&mut self, scope: &str, m: &'a DescriptorProto) {
        let name = join(scope, m.name());
        for nested in &m.nested_type {
            self.message(&name, nested);
        }
        for e in &m.enum_type {
            self.enums.insert(join(&name, e.name()), e);
        }
        self.messages.insert(name, m);
    }
}

fn join(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

fn compare_message(
    name: &str,
    old: &DescriptorProto,
    new: &DescriptorProto,
    report: &mut impl FnMut(&str, String),
) {
    let reserved_in_new = |n: i32| {
        new.reserved_range
            .iter()
            .any(|r| r.start() <= n && n < r.end())
    };
    for old_f in &old.field {
        let element = format!("{name}.{}", old_f.name());
        let number = old_f.number();
        let Some(new_f) = new.field.iter().find(|f| f.number() == number) else {
            if !reserved_in_new(number) {
                report(
                    &element,
                    format!("field {number} removed (reserve its number instead)"),
                );
            }
            continue;
        };
        if new_f.name() != old_f.name() {
            report(
                &element,
                format!("field {number} renamed to `{}`", new_f.name()),
            );
        }
        if new_f.json_name() != old_f.json_name() {
            report(
                &element,
                format!(
                    "field {number} JSON name changed from `{}` to `{}`",
                    old_f.json_name(),
                    new_f.json_name()
                ),
            );
        }
        let (old_t, new_t) = (type_of(old_f), type_of(new_f));
        if old_t != new_t {
            report(
                &element,
                format!("field {number} type changed from {old_t} to {new_t}"),
            );
        }
        if cardinality(old_f) != cardinality(new_f) {
            report(
                &element,
                format!(
                    "field {number} label changed from {} to {}",
                    cardinality(old_f),
                    cardinality(new_f)
                ),
            );
        }
        let (old_o, new_o) = (oneof_of(old, old_f), oneof_of(new, new_f));
        if old_o != new_o {
            report(
                &element,
                format!(
                    "field {number} moved from oneof {} to oneof {}",
                    old_o.unwrap_or("(none)"),
                    new_o.unwrap_or("(none)")
                ),
            );
        }
    }
    // A number the old release reserved may be in use by even older peers.
    for r in &old.reserved_range {
        for f in &new.field {
            if r.start() <= f.number() && f.number() < r.end() {
                report(
                    &format!("{name}.{}", f.name()),
                    format!("field {} reuses a reserved number", f.number()),
                );
            }
        }
    }
}

fn compare_enum(
    name: &str,
    old: &EnumDescriptorProto,
    new: &EnumDescriptorProto,
    report: &mut impl FnMut(&str, String),
) {
    let reserved_in_new = |n: i32| {
        new.reserved_range
            .iter()
            .any(|r| r.start() <= n && n <= r.end())
    };
    for old_v in &old.value {
        let element = format!("{name}.{}", old_v.name());
        let number = old_v.number();
        match new.value.iter().find(|v| v.number() == number) {
            None if !reserved_in_new(number) => report(
                &element,
                format!("enum value {number} removed (reserve its number instead)"),
            ),
            None => {}
            Some(new_v) if new_v.name() != old_v.name() => report(
                &element,
                format!("enum value {number} renamed to `{}`", new_v.name()),
            ),
            Some(_) => {}
        }
    }
}

fn compare_service(
    name: &str,
    old: &ServiceDescriptorProto,
    new: &ServiceDescriptorProto,
    report: &mut impl FnMut(&str, String),
) {
    for old_m in &old.method {
        let element = format!("{name}.{}", old_m.name());
        let Some(new_m) = new.method.iter().find(|m| m.name() == old_m.name()) else {
            report(&element, "rpc removed".into());
            continue;
        };
        if new_m.input_type() != old_m.input_type() {
            report(
                &element,
                format!(
                    "request type changed from {} to {}",
                    old_m.input_type(),
                    new_m.input_type()
                ),
            );
        }
        if new_m.output_type() != old_m.output_type() {
            report(
                &element,
                format!(
                    "response type changed from {} to {}",
                    old_m.output_type(),
                    new_m.output_type()
                ),
            );
        }
        if new_m.client_streaming() != old_m.client_streaming() {
            report(&element, "client streaming changed".into());
        }
        if new_m.server_streaming() != old_m.server_streaming() {
            report(&element, "server streaming changed".into());
        }
    }
}

/// `string`, `int64`, `message .fleetgate.v1.Gate`, `enum .fleetgate.v1.Mode`.
fn type_of(f: &FieldDescriptorProto) -> String {
    match f.r#type() {
        Type::Message | Type::Group | Type::Enum => {
            format!("{} {}", f.r#type().as_str_name(), f.type_name())
        }
        t => t.as_str_name().to_owned(),
    }
}

/// `repeated` or `singular`: proto3 `optional` only adds presence, which the
/// wire does not carry, so it is the same cardinality as a plain field.
fn cardinality(f: &FieldDescriptorProto) -> &'static str {
    match f.label() {
        Label::Repeated => "repeated",
        Label::Required => "required",
        Label::Optional => "singular",
    }
}

/// The real oneof a field is in (not the synthetic one of proto3 `optional`).
fn oneof_of<'a>(m: &'a DescriptorProto, f: &FieldDescriptorProto) -> Option<&'a str> {
    if f.proto3_optional() {
        return None;
    }
    let i = usize::try_from(f.oneof_index?).ok()?;
    m.oneof_decl.get(i).map(|o| o.name())
}
