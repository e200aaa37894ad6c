//! How a kind holds its rollouts, as data: the field a hold sets (at any depth) and what it
//! sets there. Everything a hold, a release and the decision table do with the control is
//! derived here from that declaration, once for every kind.

use serde_json::Value;

use super::update_strategy::Strategy;
use super::{Field, Json};
use crate::template::classify::Change;
use crate::view::at;

/// The field a hold sets, as object keys from the object's top (any depth), and how it holds.
#[derive(Debug, Clone, Copy)]
pub struct Control {
    pub path: &'static [&'static str],
    pub held: Held,
}

/// What a hold sets at the control.
#[derive(Debug, Clone, Copy)]
pub enum Held {
    /// A boolean pause flag, held at `true`. A paused kind creates the pods it needs meanwhile
    /// (scale-up, eviction) from its **old** template, so only changes that add bindings, or
    /// change them without changing which secrets they project, may wait; one that drops a
    /// binding secret (which the unbind deletes) rolls now, or new pods would hang on the
    /// deleted secret. Unpausing is the owner's resume, and on a held workload a release.
    Pause,
    /// An update strategy object, held at its `OnDelete` type: running pods keep running, and
    /// a pod created later comes from the current template, so it never mounts a deleted
    /// binding secret.
    Strategy(&'static Strategy),
}

impl Control {
    /// A pause flag at `path`.
    pub const fn pause(path: &'static [&'static str]) -> Self {
        Control {
            path,
            held: Held::Pause,
        }
    }

    /// An update strategy at `path`.
    pub const fn strategy(path: &'static [&'static str], strategy: &'static Strategy) -> Self {
        Control {
            path,
            held: Held::Strategy(strategy),
        }
    }

    /// The control as a field the reader reads.
    pub const fn field(&self) -> Field {
        let json = match self.held {
            Held::Pause => Json::Boolean,
            Held::Strategy(_) => Json::Object,
        };
        Field::new(self.path, json)
    }

    /// The control as `object` has it.
    pub fn of<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        at(object, self.path)
    }

    /// The value that holds the rollout.
    pub fn held(&self) -> Value {
        match self.held {
            Held::Pause => Value::Bool(true),
            Held::Strategy(_) => super::update_strategy::on_delete(),
        }
    }

    /// Whether this value already keeps pods from rolling (an owner's own `OnDelete` or
    /// pause): nothing would roll, so there is nothing to hold.
    pub fn stops_rollouts(&self, control: Option<&Value>) -> bool {
        match self.held {
            Held::Pause => control.and_then(Value::as_bool) == Some(true),
            Held::Strategy(_) => super::update_strategy::is_on_delete(control),
        }
    }

    /// Whether a controller may be rolling pods under this value (read from `oldObject`): a
    /// strategy rolls only as a RollingUpdate; a pause flag says nothing of a rollout begun.
    pub fn may_roll(&self, control: Option<&Value>) -> bool {
        match self.held {
            Held::Pause => true,
            Held::Strategy(_) => super::update_strategy::is_rolling(control),
        }
    }

    /// The value the API server gives the control when it is absent.
    pub fn default(&self) -> Value {
        match self.held {
            Held::Pause => Value::Bool(false),
            Held::Strategy(strategy) => (strategy.default)(),
        }
    }

    /// Whether the API server accepts this value: a release writes back only such a value,
    /// or it would make the write that carries it fail.
    pub fn accepts(&self, control: &Value) -> bool {
        match self.held {
            Held::Pause => control.is_boolean(),
            Held::Strategy(strategy) => strategy.accepts(control),
        }
    }

    /// Whether a request that sets a rolling control on a held workload asks for the release
    /// (unpausing, a Deployment's `rollout resume`); otherwise the new control is remembered
    /// for later.
    pub fn resume_releases(&self) -> bool {
        matches!(self.held, Held::Pause)
    }

    /// Why this binding change must roll now on a held `kind` instead of waiting, if it must:
    /// a paused one would start new pods from the old template.
    pub fn roll_now(&self, change: &Change, kind: &str) -> Option<String> {
        match self.held {
            Held::Pause => change.removal().map(|what| {
                [
                    what.as_str(),
                    "; a paused ",
                    kind,
                    " would start new pods from the old template",
                ]
                .concat()
            }),
            Held::Strategy(_) => None,
        }
    }
}
