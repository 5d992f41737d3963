//! The two JSON forms adk-python writes, and the field codecs they share.
//!
//! adk-python's models are pydantic models with `alias_generator=to_camel, populate_by_name=True`:
//! the REST API writes camelCase (`model_dump(by_alias=True)`) and the session stores write the field
//! names, snake_case (`model_dump()`); both forms are read. Our types derive `Serialize` in the
//! camelCase form and accept both through `#[serde(alias)]`. The snake_case form is the same
//! serialization with every struct field renamed, which [`to_snake_value`] does with a serializer
//! that builds a [`Value`]: struct field names are renamed, map keys are not (they are data: state
//! keys, file names, call ids, tool arguments).
//!
//! Some google-genai types that sinew only carries (grounding metadata, transcriptions, tool
//! configs...) are kept as [`Value`]s. Their keys are field names too, so they are read into the
//! camelCase form ([`opaque`]) and marked, so that the snake_case form renames the keys inside them.

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};
use serde::de::{Deserialize, Deserializer};
use serde::ser::{self, Serialize, Serializer};
use serde_json::{Map, Value};

/// The marker name of a value whose keys are field names (see the module docs).
const GENAI: &str = "__sinew_adk_genai";

/// `foo_bar` → `fooBar`, as pydantic's `to_camel` does for field names.
pub(crate) fn to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `fooBar` → `foo_bar`: the field name a camelCase alias came from.
pub(crate) fn to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Fields of the genai types kept as values whose content is data (header names, request
/// bodies, call arguments, schemas): their keys are never renamed.
const DATA_FIELDS: [&str; 16] = [
    "headers",
    "extraBody",
    "extra_body",
    "args",
    "response",
    "payload",
    "labels",
    "parameters",
    "parametersJsonSchema",
    "parameters_json_schema",
    "responseJsonSchema",
    "response_json_schema",
    "customMetadata",
    "custom_metadata",
    "metadata",
    "env",
];

fn rename_keys(value: Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if DATA_FIELDS.contains(&k.as_str()) { v } else { rename_keys(v, rename) };
                    (rename(&k), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| rename_keys(v, rename)).collect()),
        other => other,
    }
}

/// Serializes `value` in adk-python's storage form: the snake_case field names of `model_dump()`.
pub fn to_snake_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, serde_json::Error> {
    value.serialize(SnakeSerializer)
}

/// `serde(with)` codec for opaque google-genai values (`Option<Value>`): read in either case and kept
/// camelCase; renamed to snake_case in the storage form.
pub(crate) mod opaque {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &Option<Value>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => serializer.serialize_newtype_struct(GENAI, v),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
        Ok(Option::<Value>::deserialize(deserializer)?.map(|v| rename_keys(v, to_camel)))
    }
}

/// [`opaque`] for a boxed value: the response and part fields that are almost always absent stay
/// one pointer wide.
pub(crate) mod opaque_boxed {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &Option<Box<Value>>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => serializer.serialize_newtype_struct(GENAI, v.as_ref()),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Box<Value>>, D::Error> {
        Ok(opaque::deserialize(deserializer)?.map(Box::new))
    }
}

/// URL-safe base64 with padding out; the standard and URL-safe alphabets, padded or not, in —
/// pydantic's `ser_json_bytes='base64'` / `val_json_bytes='base64'`.
pub(crate) mod base64_bytes {
    use super::*;

    const LENIENT: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const URL_SAFE_IN: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);
    const STANDARD_IN: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);

    pub(crate) fn encode(bytes: &[u8]) -> String {
        general_purpose::URL_SAFE.encode(bytes)
    }

    pub(crate) fn decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
        // A text holding `-` or `_` is URL-safe, one holding `+` or `/` standard; neither decodes alike.
        URL_SAFE_IN.decode(text).or_else(|_| STANDARD_IN.decode(text))
    }

    pub(crate) mod option {
        use super::*;

        pub(crate) fn serialize<S: Serializer>(value: &Option<Vec<u8>>, serializer: S) -> Result<S::Ok, S::Error> {
            match value {
                Some(bytes) => serializer.serialize_str(&encode(bytes)),
                None => serializer.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<u8>>, D::Error> {
            let Some(text) = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)? else {
                return Ok(None);
            };
            decode(&text).map(Some).map_err(|e| serde::de::Error::custom(format!("invalid base64 bytes: {e}")))
        }
    }
}

/// Builds a [`Value`] like `serde_json::to_value`, with struct field names in snake_case.
struct SnakeSerializer;

type Error = serde_json::Error;

fn key_string(key: Value) -> Result<String, Error> {
    match key {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ser::Error::custom("a map key must be a string")),
    }
}

impl Serializer for SnakeSerializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = VariantBuilder<SeqBuilder>;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = VariantBuilder<MapBuilder>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        serde_json::value::Serializer.serialize_f32(v)
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        serde_json::value::Serializer.serialize_f64(v)
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        serde_json::value::Serializer.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<Value, Error> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, value: &T) -> Result<Value, Error> {
        if name == GENAI { Ok(rename_keys(serde_json::to_value(value)?, to_snake)) } else { value.serialize(self) }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        let mut map = Map::new();
        map.insert(variant.to_owned(), value.serialize(self)?);
        Ok(Value::Object(map))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<SeqBuilder, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<VariantBuilder<SeqBuilder>, Error> {
        Ok(VariantBuilder { variant, inner: SeqBuilder(Vec::with_capacity(len)) })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapBuilder, Error> {
        Ok(MapBuilder { map: Map::new(), key: None })
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<MapBuilder, Error> {
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<VariantBuilder<MapBuilder>, Error> {
        Ok(VariantBuilder { variant, inner: MapBuilder { map: Map::new(), key: None } })
    }
}

struct SeqBuilder(Vec<Value>);

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.push(value.serialize(SnakeSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

struct MapBuilder {
    map: Map<String, Value>,
    key: Option<String>,
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key_string(serde_json::to_value(key)?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(|| ser::Error::custom("a map value came before its key"))?;
        self.map.insert(key, value.serialize(SnakeSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.map))
    }
}

impl ser::SerializeStruct for MapBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.map.insert(to_snake(key), value.serialize(SnakeSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.map))
    }
}

struct VariantBuilder<B> {
    variant: &'static str,
    inner: B,
}

impl<B> VariantBuilder<B> {
    fn wrap(variant: &'static str, value: Value) -> Value {
        let mut map = Map::new();
        map.insert(variant.to_owned(), value);
        Value::Object(map)
    }
}

impl ser::SerializeTupleVariant for VariantBuilder<SeqBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(&mut self.inner, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Self::wrap(self.variant, ser::SerializeSeq::end(self.inner)?))
    }
}

impl ser::SerializeStructVariant for VariantBuilder<MapBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.inner, key, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Self::wrap(self.variant, ser::SerializeStruct::end(self.inner)?))
    }
}

#[cfg(test)]
mod tests;
