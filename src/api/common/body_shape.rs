//! One description of each JSON request body of the REST dialects: a table of its fields, each
//! with its name, its documentation and what it takes. The hand parsers read the fields through
//! the table (unknown keys, required fields, integer ranges, string lengths and characters, list
//! sizes) and the body's OpenAPI schema is made from the same table, so the document prints the
//! bounds the parser holds a request to. Errors name the field and its bounds, never a value.

use super::json::{list, optional_int, parse_object, prefixed, reject_unknown};
use crate::core::GatewayError;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use utoipa::openapi::schema::RefBuilder;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema,
    SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

/// The name of a schema in the document's components: a `ToSchema::name`, so a reference names
/// a type the document lists.
pub(crate) type SchemaName = fn() -> Cow<'static, str>;

/// A JSON object body: its fields, and no other key (`additionalProperties: false`).
pub(crate) struct Shape {
    /// The schema's description.
    pub doc: &'static str,
    /// The fields, in the order the document and the unknown-key refusal list them.
    pub fields: &'static [&'static dyn Describe],
    /// An example of the whole body, when the document shows one.
    pub example: Option<fn() -> Value>,
}

impl Shape {
    /// The body as an object of this shape's keys only; an empty body is `{}` when
    /// `empty_is_default`.
    pub(crate) fn parse(
        &self,
        body: &[u8],
        empty_is_default: bool,
    ) -> Result<Map<String, Value>, GatewayError> {
        let object = parse_object(body, empty_is_default)?;
        self.check(&object, "")?;
        Ok(object)
    }

    /// Refuses a key none of the fields names, without echoing it; `at` says where the object
    /// is (`entries[0]`, empty at the top).
    pub(crate) fn check(&self, object: &Map<String, Value>, at: &str) -> Result<(), GatewayError> {
        let names: Vec<&str> = self.fields.iter().map(|field| field.name()).collect();
        reject_unknown(object, &names, at)
    }

    /// The body's schema.
    pub(crate) fn schema(&self) -> RefOr<Schema> {
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(self.doc))
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)));
        for field in self.fields {
            if field.is_required() {
                object = object.required(field.name());
            }
            object = object.property(field.name(), field.schema());
        }
        with_example(object, self.example.map(|example| example())).into()
    }
}

/// Implements utoipa's schema traits for a type that names a body in the document
/// (`request_body = …`, `components(schemas(…))`): its schema is the shape's.
macro_rules! body_schema {
    ($name:ty, $shape:expr) => {
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $shape.schema()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
pub(crate) use body_schema;

/// A field of a [`Shape`]: what the table needs of each, whatever it takes.
pub(crate) trait Describe {
    /// Its key.
    fn name(&self) -> &'static str;
    /// Whether a body must give it.
    fn is_required(&self) -> bool;
    /// Its schema, with its documentation.
    fn schema(&self) -> RefOr<Schema>;
}

/// Whether a body must give a field. An optional field may be left out or given as `null`, which
/// counts as left out (except a [`Choice`] without `null_is_default`: `null` is not one of its
/// names).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Required,
    Optional,
}

/// A field: its key, its documentation and what it takes (`K`).
pub(crate) struct Field<K> {
    pub name: &'static str,
    pub doc: &'static str,
    pub presence: Presence,
    pub kind: K,
}

impl<K> Field<K> {
    /// A field every body gives.
    pub(crate) const fn required(name: &'static str, doc: &'static str, kind: K) -> Self {
        Self {
            name,
            doc,
            presence: Presence::Required,
            kind,
        }
    }

    /// A field a body may leave out.
    pub(crate) const fn optional(name: &'static str, doc: &'static str, kind: K) -> Self {
        Self {
            name,
            doc,
            presence: Presence::Optional,
            kind,
        }
    }

    fn required_here(&self) -> bool {
        self.presence == Presence::Required
    }

    /// The field's value, `null` counting as absent.
    fn given<'o>(&self, object: &'o Map<String, Value>) -> Option<&'o Value> {
        object.get(self.name).filter(|value| !value.is_null())
    }

    /// The field's place in errors: `entries[0].receiptHandle`, or its key at the top.
    fn path(&self, at: &str) -> String {
        if at.is_empty() {
            self.name.to_owned()
        } else {
            format!("{at}.{}", self.name)
        }
    }

    /// `{path} {phrase}`, malformed.
    fn refused(&self, at: &str, phrase: &str) -> GatewayError {
        GatewayError::invalid_request(format!("{} {phrase}", self.path(at)))
    }

    /// The type of a field's own schema: `T`, or `[T, null]` when it may be `null`.
    fn schema_type(&self, kind: Type) -> SchemaType {
        match self.presence {
            Presence::Required => kind.into(),
            Presence::Optional => SchemaType::from_iter([kind, Type::Null]),
        }
    }

    /// A reference to the schema `name`, with the field's documentation; `null` besides when
    /// the field may be `null`.
    fn reference(&self, name: SchemaName) -> RefOr<Schema> {
        let reference = described(name, self.doc);
        match self.presence {
            Presence::Required => reference.into(),
            Presence::Optional => OneOfBuilder::new()
                .item(ObjectBuilder::new().schema_type(Type::Null))
                .item(reference)
                .into(),
        }
    }
}

/// A reference to the schema `name` with a description of its own.
fn described(name: SchemaName, doc: &str) -> Ref {
    RefBuilder::new()
        .ref_location_from_schema_name(name())
        .description(Some(doc))
        .build()
}

/// Adds an example to a schema. The documents print it as `example`, as utoipa's derive does.
#[allow(deprecated)]
fn with_example(object: ObjectBuilder, example: Option<Value>) -> ObjectBuilder {
    object.example(example)
}

/// An integer from `least` to `most`.
#[derive(Clone, Copy)]
pub(crate) struct Integer {
    least: u32,
    most: u32,
    default: Option<u32>,
    example: Option<u32>,
}

impl Integer {
    /// An integer from `least` to `most`, both taken.
    pub(crate) const fn from_to(least: u32, most: u32) -> Self {
        Self {
            least,
            most,
            default: None,
            example: None,
        }
    }

    /// What a body that leaves the field out means.
    pub(crate) const fn default(self, default: u32) -> Self {
        Self {
            default: Some(default),
            ..self
        }
    }

    /// A value the document shows.
    pub(crate) const fn example(self, example: u32) -> Self {
        Self {
            example: Some(example),
            ..self
        }
    }
}

impl Field<Integer> {
    /// The field's integer, its default when left out (`None` when it has none); an integer out
    /// of range is refused naming the range.
    pub(crate) fn read(
        &self,
        object: &Map<String, Value>,
        at: &str,
    ) -> Result<Option<u32>, GatewayError> {
        let Integer {
            least,
            most,
            default,
            ..
        } = self.kind;
        let value =
            optional_int(object, self.name, least.into(), most.into()).map_err(|error| {
                if at.is_empty() {
                    error
                } else {
                    prefixed(error, at)
                }
            })?;
        match value.or(default) {
            None if self.required_here() => Err(self.refused(at, "is required")),
            value => Ok(value),
        }
    }

    /// The integer of a field that is required or has a default.
    pub(crate) fn value(&self, object: &Map<String, Value>, at: &str) -> Result<u32, GatewayError> {
        self.read(object, at)?
            .ok_or_else(|| self.refused(at, "is required"))
    }
}

impl Describe for Field<Integer> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        let object = ObjectBuilder::new()
            .schema_type(self.schema_type(Type::Integer))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .description(Some(self.doc))
            .default(self.kind.default.map(Value::from))
            .minimum(Some(self.kind.least))
            .maximum(Some(self.kind.most));
        with_example(object, self.kind.example.map(Value::from)).into()
    }
}

/// A string.
#[derive(Clone, Copy)]
pub(crate) struct Text {
    /// The fewest characters the parser takes (`minLength`).
    least: usize,
    /// The most characters the parser takes (`maxLength`).
    most: Option<usize>,
    chars: Chars,
    example: Option<&'static str>,
    /// What an error says of a refused value after the field's name, when not the kind's.
    refusal: Option<&'static str>,
    /// The component whose schema the field's is, printed as a reference to it.
    named: Option<SchemaName>,
}

/// The characters of a [`Text`].
#[derive(Clone, Copy)]
enum Chars {
    /// Any.
    Any,
    /// ASCII letters, digits and these bytes (`-` among them last in a pattern), which the
    /// parser checks; the pattern is made of them and the lengths.
    Word(&'static str),
    /// At least one of those the pattern admits: the core's message rules check them, not the
    /// parser (its refusals are the core's).
    Core(&'static str),
    /// A UUID, as `uuid::Uuid::parse_str` reads one.
    Uuid,
}

impl Text {
    const fn of(chars: Chars) -> Self {
        Self {
            least: 0,
            most: None,
            chars,
            example: None,
            refusal: None,
            named: None,
        }
    }

    /// Any string.
    pub(crate) const fn any() -> Self {
        Self::of(Chars::Any)
    }

    /// `least` to `most` ASCII letters, digits and bytes of `also` (named in that order in
    /// errors: `letters, digits, `-` or `_``).
    pub(crate) const fn word(least: usize, most: usize, also: &'static str) -> Self {
        Self {
            least,
            most: Some(most),
            ..Self::of(Chars::Word(also))
        }
    }

    /// A string the core checks against `pattern` (one character at least), after the parser.
    pub(crate) const fn core(pattern: &'static str) -> Self {
        Self::of(Chars::Core(pattern))
    }

    /// A UUID.
    pub(crate) const fn uuid() -> Self {
        Self::of(Chars::Uuid)
    }

    /// At least `least` characters.
    pub(crate) const fn least(self, least: usize) -> Self {
        Self { least, ..self }
    }

    /// At most `most` characters.
    pub(crate) const fn most(self, most: usize) -> Self {
        Self {
            most: Some(most),
            ..self
        }
    }

    /// A value the document shows.
    pub(crate) const fn example(self, example: &'static str) -> Self {
        Self {
            example: Some(example),
            ..self
        }
    }

    /// What errors say of a missing or refused value, after the field's name.
    pub(crate) const fn refused_as(self, phrase: &'static str) -> Self {
        Self {
            refusal: Some(phrase),
            ..self
        }
    }

    /// Documented as the component `name`, which describes the same strings.
    pub(crate) const fn named(self, name: SchemaName) -> Self {
        Self {
            named: Some(name),
            ..self
        }
    }

    /// The pattern of a word: `^[A-Za-z0-9_-]{1,80}$`.
    fn word_pattern(&self, also: &str) -> String {
        let mut class = String::from("A-Za-z0-9");
        class.extend(also.chars().filter(|c| *c != '-'));
        if also.contains('-') {
            class.push('-');
        }
        let most = self.most.map(|most| most.to_string()).unwrap_or_default();
        format!("^[{class}]{{{},{most}}}$", self.least)
    }

    /// Whether the parser takes `text`. Lengths count characters, as JSON Schema's do; the byte
    /// length settles most texts, and the rest are read no further than the bound.
    fn takes(&self, text: &str) -> bool {
        let long_enough = self.least == 0
            || (text.len() >= self.least && text.chars().nth(self.least - 1).is_some());
        let short_enough = self
            .most
            .is_none_or(|most| text.len() <= most || text.chars().nth(most).is_none());
        long_enough
            && short_enough
            && match self.chars {
                Chars::Any | Chars::Core(_) => true,
                Chars::Word(also) => text
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || also.as_bytes().contains(&byte)),
                Chars::Uuid => uuid::Uuid::parse_str(text).is_ok(),
            }
    }

    /// What an error says after the field's name.
    fn refusal(&self) -> String {
        if let Some(phrase) = self.refusal {
            return phrase.to_owned();
        }
        match (self.chars, self.most) {
            (Chars::Word(also), Some(most)) => {
                let mut kinds = vec!["letters".to_owned(), "digits".to_owned()];
                kinds.extend(also.chars().map(|c| format!("`{c}`")));
                let last = kinds.pop().unwrap_or_default();
                format!(
                    "must be {} to {most} {} or {last}",
                    self.least,
                    kinds.join(", ")
                )
            }
            _ => "must be a string".to_owned(),
        }
    }
}

impl Field<Text> {
    /// The field's string (`None` when an optional one is left out); a missing, mistyped or
    /// refused one is refused as the field says.
    pub(crate) fn read<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<Option<&'o str>, GatewayError> {
        match self.given(object) {
            None if !self.required_here() => Ok(None),
            Some(Value::String(text)) if self.kind.takes(text) => Ok(Some(text)),
            _ => Err(self.refused(at, &self.kind.refusal())),
        }
    }

    /// The string of a required field.
    pub(crate) fn value<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<&'o str, GatewayError> {
        self.read(object, at)?
            .ok_or_else(|| self.refused(at, &self.kind.refusal()))
    }

    /// The pattern the document gives the field, if any.
    pub(crate) fn pattern(&self) -> Option<String> {
        match self.kind.chars {
            Chars::Word(also) => Some(self.kind.word_pattern(also)),
            Chars::Core(pattern) => Some(pattern.to_owned()),
            Chars::Any | Chars::Uuid => None,
        }
    }
}

impl Describe for Field<Text> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        if let Some(name) = self.kind.named {
            return self.reference(name);
        }
        let least = match self.kind.chars {
            Chars::Core(_) => 1,
            _ => self.kind.least,
        };
        let format =
            matches!(self.kind.chars, Chars::Uuid).then(|| SchemaFormat::Custom("uuid".to_owned()));
        let object = ObjectBuilder::new()
            .schema_type(self.schema_type(Type::String))
            .format(format)
            .description(Some(self.doc))
            .min_length((least > 0).then_some(least))
            .max_length(self.kind.most)
            .pattern(self.pattern());
        with_example(object, self.kind.example.map(Value::from)).into()
    }
}

/// `true` or `false`; the document shows the default, if it has one.
#[derive(Clone, Copy)]
pub(crate) struct Flag {
    default: Option<bool>,
}

impl Flag {
    /// Either; what leaving it out means is the dialect's.
    pub(crate) const ANY: Self = Self { default: None };

    /// Either; left out, `default`.
    pub(crate) const fn defaulting_to(default: bool) -> Self {
        Self {
            default: Some(default),
        }
    }
}

impl Field<Flag> {
    /// The field's boolean (its default, else `None`, when an optional one is left out).
    pub(crate) fn read(
        &self,
        object: &Map<String, Value>,
        at: &str,
    ) -> Result<Option<bool>, GatewayError> {
        match self.given(object) {
            None if !self.required_here() => Ok(self.kind.default),
            Some(Value::Bool(value)) => Ok(Some(*value)),
            _ => Err(self.refused(at, "must be true or false")),
        }
    }
}

impl Describe for Field<Flag> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(self.schema_type(Type::Boolean))
            .description(Some(self.doc))
            .default(self.kind.default.map(Value::from))
            .into()
    }
}

/// One of a few names, which the component `schema` lists; an optional one left out is
/// `default`. `null` is not a name, unless `null_is_default`.
#[derive(Clone, Copy)]
pub(crate) struct Choice {
    pub names: &'static [&'static str],
    pub default: &'static str,
    pub schema: SchemaName,
    /// An optional one given as `null` is left out.
    pub null_is_default: bool,
}

impl Field<Choice> {
    /// The name the field gives, or the default.
    pub(crate) fn read(
        &self,
        object: &Map<String, Value>,
        at: &str,
    ) -> Result<&'static str, GatewayError> {
        let names = self.kind.names;
        let given = if self.kind.null_is_default {
            self.given(object)
        } else {
            object.get(self.name)
        };
        match given {
            None if !self.required_here() => Ok(self.kind.default),
            Some(Value::String(given)) => names
                .iter()
                .find(|name| **name == given)
                .copied()
                .ok_or_else(|| self.refusal(at)),
            _ => Err(self.refusal(at)),
        }
    }

    /// `type must be standard or fifo`.
    fn refusal(&self, at: &str) -> GatewayError {
        let names = self.kind.names;
        let listed = match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        self.refused(at, &format!("must be {listed}"))
    }
}

impl Describe for Field<Choice> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        let reference = described(self.kind.schema, self.doc);
        if self.required_here() {
            return reference.into();
        }
        let mut choices = OneOfBuilder::new();
        if self.kind.null_is_default {
            choices = choices.item(ObjectBuilder::new().schema_type(Type::Null));
        }
        choices
            .item(reference)
            .default(Some(json!(self.kind.default)))
            .into()
    }
}

/// A list of `least` to `most` items.
#[derive(Clone, Copy)]
pub(crate) struct List {
    least: usize,
    most: usize,
    items: Items,
    example: Option<&'static [&'static str]>,
    /// No item twice (`uniqueItems`).
    distinct: bool,
    /// Of [`Items::Text`]: no empty string (`minLength: 1`).
    non_empty_items: bool,
}

/// What a [`List`] holds.
#[derive(Clone, Copy)]
pub(crate) enum Items {
    /// Strings.
    Text,
    /// Values of the component `name`.
    Named(SchemaName),
    /// Values of the schema this makes.
    Schema(fn() -> RefOr<Schema>),
}

impl List {
    /// `least` to `most` items.
    pub(crate) const fn of(items: Items, least: usize, most: usize) -> Self {
        Self {
            least,
            most,
            items,
            example: None,
            distinct: false,
            non_empty_items: false,
        }
    }

    /// No item twice.
    pub(crate) const fn distinct(self) -> Self {
        Self {
            distinct: true,
            ..self
        }
    }

    /// No empty string among the items.
    pub(crate) const fn non_empty_items(self) -> Self {
        Self {
            non_empty_items: true,
            ..self
        }
    }

    /// A list of strings the document shows.
    pub(crate) const fn example(self, example: &'static [&'static str]) -> Self {
        Self {
            example: Some(example),
            ..self
        }
    }
}

impl Field<List> {
    /// The field's items (none when an optional one is left out); a list of another length is
    /// out of range.
    pub(crate) fn read<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<&'o [Value], GatewayError> {
        if !self.required_here() && self.given(object).is_none() {
            return Ok(&[]);
        }
        let items = list(object, self.name, self.kind.least, self.kind.most).map_err(|error| {
            if at.is_empty() {
                error
            } else {
                prefixed(error, at)
            }
        })?;
        Ok(items)
    }

    /// The field's items as strings; an item that is not one (or is too short) is refused by
    /// its index, a repeated one when the list is distinct.
    pub(crate) fn strings<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<Vec<&'o str>, GatewayError> {
        let non_empty = self.kind.non_empty_items;
        let kind = if non_empty {
            "a non-empty string"
        } else {
            "a string"
        };
        let strings = (self.read(object, at)?.iter().enumerate())
            .map(|(index, item)| {
                item.as_str()
                    .filter(|text| !(non_empty && text.is_empty()))
                    .ok_or_else(|| {
                        GatewayError::invalid_request(format!(
                            "{}[{index}] must be {kind}",
                            self.path(at)
                        ))
                    })
            })
            .collect::<Result<Vec<&str>, GatewayError>>()?;
        if self.kind.distinct {
            let distinct: std::collections::BTreeSet<&str> = strings.iter().copied().collect();
            if distinct.len() != strings.len() {
                return Err(self.refused(at, "must be distinct"));
            }
        }
        Ok(strings)
    }
}

impl Describe for Field<List> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        let items: RefOr<Schema> = match self.kind.items {
            Items::Text => ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(self.kind.non_empty_items.then_some(1))
                .into(),
            Items::Named(name) => Ref::from_schema_name(name()).into(),
            Items::Schema(schema) => schema(),
        };
        #[allow(deprecated)]
        let array = ArrayBuilder::new()
            .schema_type(self.schema_type(Type::Array))
            .items(items)
            .description(Some(self.doc))
            .example(self.kind.example.map(|example| json!(example)))
            .min_items(Some(self.kind.least))
            .max_items(Some(self.kind.most))
            .unique_items(self.kind.distinct);
        array.into()
    }
}

/// An object of another shape, the component `name` (whose reader reads its fields).
#[derive(Clone, Copy)]
pub(crate) struct Nested(pub SchemaName);

impl Field<Nested> {
    /// The field's object (`None` when an optional one is left out).
    pub(crate) fn read<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<Option<&'o Map<String, Value>>, GatewayError> {
        match self.given(object) {
            Some(Value::Object(nested)) => Ok(Some(nested)),
            _ if self.required_here() => Err(self.refused(at, "is required, an object")),
            None => Ok(None),
            Some(_) => Err(self.refused(at, "must be an object")),
        }
    }

    /// The object of a required field.
    pub(crate) fn value<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<&'o Map<String, Value>, GatewayError> {
        self.read(object, at)?
            .ok_or_else(|| self.refused(at, "is required, an object"))
    }
}

impl Describe for Field<Nested> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        self.reference(self.kind.0)
    }
}

/// A value the table cannot describe (a typed map): the dialect reads it, and `schema` makes
/// its schema (to which the field's documentation is added).
#[derive(Clone, Copy)]
pub(crate) struct Custom(pub fn() -> RefOr<Schema>);

impl Field<Custom> {
    /// The field's value (`None` when an optional one is left out).
    pub(crate) fn read<'o>(
        &self,
        object: &'o Map<String, Value>,
        at: &str,
    ) -> Result<Option<&'o Value>, GatewayError> {
        match self.given(object) {
            None if self.required_here() => Err(self.refused(at, "is required")),
            value => Ok(value),
        }
    }
}

impl Describe for Field<Custom> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_required(&self) -> bool {
        self.required_here()
    }

    fn schema(&self) -> RefOr<Schema> {
        let mut schema = (self.kind.0)();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.description = Some(self.doc.to_owned());
        }
        schema
    }
}

#[cfg(test)]
mod tests;
