//! serde for floats that may not be finite. JSON has no NaN or infinity (serde_json writes them
//! as `null`, which then fails to read back into an `f64`), yet a Cohen's d of deterministic runs
//! is `±inf` and the mean of no runs is NaN. These helpers write a finite number as a number,
//! NaN as `null` and `±inf` as the strings `"inf"` / `"-inf"`, and read all of them back.

use serde::{Deserialize, Deserializer, Serializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum Repr {
    Num(f64),
    Str(String),
}

fn from_repr<E: serde::de::Error>(r: Option<Repr>) -> Result<f64, E> {
    match r {
        None => Ok(f64::NAN),
        Some(Repr::Num(x)) => Ok(x),
        Some(Repr::Str(s)) => match s.as_str() {
            "inf" | "+inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            "nan" | "NaN" => Ok(f64::NAN),
            other => Err(E::custom(format!(
                "expected a number, null, \"inf\" or \"-inf\", found the string {other:?}"
            ))),
        },
    }
}

fn write<S: Serializer>(x: f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(x)
    } else if x.is_nan() {
        s.serialize_none()
    } else if x > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

/// `#[serde(with = "reprolab_core::fnum::float")]` for an `f64`.
pub mod float {
    use super::*;

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        write(*x, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        from_repr(Option::<Repr>::deserialize(d)?)
    }
}

/// `#[serde(default, with = "reprolab_core::fnum::opt_float")]` for an `Option<f64>`: `None` and NaN
/// are both `null` (and read back as `None`).
pub mod opt_float {
    use super::*;

    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(v) => write(*v, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let v = from_repr(Option::<Repr>::deserialize(d)?)?;
        Ok(if v.is_nan() { None } else { Some(v) })
    }
}

/// `#[serde(with = "reprolab_core::fnum::samples")]` for a `Vec<Option<f64>>` of per-seed metrics:
/// a failed run is `null`.
pub mod samples {
    use super::*;
    use serde::ser::SerializeSeq;

    pub fn serialize<S: Serializer>(xs: &[Option<f64>], s: S) -> Result<S::Ok, S::Error> {
        struct One(Option<f64>);
        impl serde::Serialize for One {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                super::opt_float::serialize(&self.0, s)
            }
        }
        let mut seq = s.serialize_seq(Some(xs.len()))?;
        for x in xs {
            seq.serialize_element(&One(*x))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<f64>>, D::Error> {
        let raw = Vec::<Option<Repr>>::deserialize(d)?;
        raw.into_iter()
            .map(|r| from_repr::<D::Error>(r).map(|v| if v.is_nan() { None } else { Some(v) }))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct T {
        #[serde(with = "super::float")]
        a: f64,
        #[serde(default, with = "super::opt_float")]
        b: Option<f64>,
        #[serde(with = "super::samples")]
        c: Vec<Option<f64>>,
    }

    #[test]
    fn non_finite_values_round_trip() {
        let t = T {
            a: f64::NEG_INFINITY,
            b: Some(f64::INFINITY),
            c: vec![Some(0.5), None, Some(f64::INFINITY)],
        };
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"a":"-inf","b":"inf","c":[0.5,null,"inf"]}"#);
        assert_eq!(serde_json::from_str::<T>(&j).unwrap(), t);

        let nan: T = serde_json::from_str(r#"{"a":null,"b":null,"c":[]}"#).unwrap();
        assert!(nan.a.is_nan() && nan.b.is_none());
        let missing: T = serde_json::from_str(r#"{"a":1,"c":[]}"#).unwrap();
        assert_eq!(missing.b, None);
        assert!(serde_json::from_str::<T>(r#"{"a":"x","c":[]}"#).is_err());
    }
}
