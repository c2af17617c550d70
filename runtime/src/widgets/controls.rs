//! The standard controls a cell reaches for: sliders, a button, a checkbox, a dropdown, a text
//! box, a label, HTML and a progress bar. Each is a handle on one [`Model`]: clones share it,
//! reads see the frontend's latest change, setters reach the frontend at once.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::model::Model;
use crate::error::{Error, Result};

fn state(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn invalid(op: &'static str, message: String) -> Error {
    Error::InvalidArgument { op, message }
}

/// `v` kept between `a` and `b`, whichever is lower: the bounds come from the browser too, and
/// `f64::clamp` panics when they arrive swapped.
fn within(v: f64, a: f64, b: f64) -> f64 {
    v.max(a.min(b)).min(a.max(b))
}

fn text(model: &Model, key: &str) -> String {
    model.get(key).as_str().unwrap_or("").to_string()
}

/// What every control shares: its id, display, description, disabling and closing.
macro_rules! control {
    ($ty:ident) => {
        impl $ty {
            /// The model id the frontend knows this widget by (its comm's id).
            pub fn model_id(&self) -> &str {
                self.model.id()
            }

            /// Sets the label shown beside the control.
            pub fn set_description(&self, description: &str) {
                self.model
                    .set(state(&[("description", json!(description))]));
            }

            /// Greys the control out (true) or lets people use it again.
            pub fn set_disabled(&self, disabled: bool) {
                self.model.set(state(&[("disabled", json!(disabled))]));
            }

            /// Closes the widget: its views go from the page and its comm closes.
            pub fn close(&self) {
                self.model.close();
            }

            /// Whether the widget was closed, here or by the frontend.
            pub fn is_closed(&self) -> bool {
                self.model.is_closed()
            }

            /// The notebook display (what evcxr shows when a cell ends with this widget).
            pub fn evcxr_display(&self) {
                crate::evcxr_display::emit_bundle(&crate::notebook::Displayable::mime_bundle(self));
            }
        }

        impl crate::notebook::Displayable for $ty {
            fn mime_bundle(&self) -> Vec<(&'static str, String)> {
                self.model.bundle(self.summary())
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.summary())
            }
        }
    };
}

/// A slider over whole numbers (ipywidgets' `IntSlider`).
#[derive(Clone)]
pub struct IntSlider {
    model: Arc<Model>,
}
control!(IntSlider);

impl IntSlider {
    /// A slider from `min` to `max` (inclusive) at `value`, labelled `description`. An empty
    /// range or a value outside it is an error.
    pub fn new(description: &str, min: i64, max: i64, value: i64) -> Result<IntSlider> {
        if min > max || !(min..=max).contains(&value) {
            return Err(invalid(
                "IntSlider::new",
                format!("value {value} must lie in min..=max = {min}..={max}"),
            ));
        }
        Ok(IntSlider {
            model: Model::open(
                "IntSlider",
                "IntSlider",
                state(&[
                    ("description", json!(description)),
                    ("min", json!(min)),
                    ("max", json!(max)),
                    ("value", json!(value)),
                    ("step", json!(1)),
                ]),
            ),
        })
    }

    fn bound(&self, key: &str, default: i64) -> i64 {
        self.model.get(key).as_i64().unwrap_or(default)
    }

    /// The value now: the last one set here or in the browser, kept within the range.
    pub fn value(&self) -> i64 {
        let (min, max) = (self.bound("min", 0), self.bound("max", 0));
        let v = self.model.get("value");
        let v = v
            .as_i64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.round() as i64)
            })
            .unwrap_or(min);
        v.clamp(min.min(max), max.max(min))
    }

    /// Moves the slider (kept within its range); the browser follows.
    pub fn set_value(&self, value: i64) {
        let (min, max) = (self.bound("min", 0), self.bound("max", 0));
        self.model.set(state(&[(
            "value",
            json!(value.clamp(min.min(max), max.max(min))),
        )]));
    }

    fn summary(&self) -> String {
        format!(
            "IntSlider(description={:?}, value={}, min={}, max={})",
            text(&self.model, "description"),
            self.value(),
            self.bound("min", 0),
            self.bound("max", 0)
        )
    }
}

/// A slider over real numbers (ipywidgets' `FloatSlider`).
#[derive(Clone)]
pub struct FloatSlider {
    model: Arc<Model>,
}
control!(FloatSlider);

impl FloatSlider {
    /// A slider from `min` to `max` at `value` in steps of a hundredth of the range (see
    /// [`FloatSlider::set_step`]). Bounds that are not finite, an empty range or a value
    /// outside it are errors.
    pub fn new(description: &str, min: f64, max: f64, value: f64) -> Result<FloatSlider> {
        if !(min.is_finite() && max.is_finite() && value.is_finite())
            || min > max
            || !(min..=max).contains(&value)
        {
            return Err(invalid(
                "FloatSlider::new",
                format!("value {value} must lie in min..=max = {min}..={max}, all finite"),
            ));
        }
        let step = if max > min { (max - min) / 100.0 } else { 1.0 };
        Ok(FloatSlider {
            model: Model::open(
                "FloatSlider",
                "FloatSlider",
                state(&[
                    ("description", json!(description)),
                    ("min", json!(min)),
                    ("max", json!(max)),
                    ("value", json!(value)),
                    ("step", json!(step)),
                    ("readout_format", json!(".3g")),
                ]),
            ),
        })
    }

    fn bound(&self, key: &str) -> f64 {
        self.model.get(key).as_f64().unwrap_or(0.0)
    }

    /// The value now, kept within the range.
    pub fn value(&self) -> f64 {
        let (min, max) = (self.bound("min"), self.bound("max"));
        let v = self
            .model
            .get("value")
            .as_f64()
            .filter(|v| v.is_finite())
            .unwrap_or(min);
        within(v, min, max)
    }

    /// Moves the slider (kept within its range; not a number is refused).
    pub fn set_value(&self, value: f64) -> Result<()> {
        if value.is_nan() {
            return Err(invalid("FloatSlider::set_value", "value is NaN".into()));
        }
        let v = within(value, self.bound("min"), self.bound("max"));
        self.model.set(state(&[("value", json!(v))]));
        Ok(())
    }

    /// The step the slider moves by (positive and finite).
    pub fn set_step(&self, step: f64) -> Result<()> {
        if !(step.is_finite() && step > 0.0) {
            return Err(invalid(
                "FloatSlider::set_step",
                format!("step {step} must be positive and finite"),
            ));
        }
        self.model.set(state(&[("step", json!(step))]));
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "FloatSlider(description={:?}, value={}, min={}, max={})",
            text(&self.model, "description"),
            self.value(),
            self.bound("min"),
            self.bound("max")
        )
    }
}

/// A button that counts its clicks (ipywidgets' `Button`).
#[derive(Clone)]
pub struct Button {
    model: Arc<Model>,
}
control!(Button);

impl Button {
    /// A button labelled `label`.
    pub fn new(label: &str) -> Button {
        Button {
            model: Model::open(
                "Button",
                "Button",
                state(&[("description", json!(label)), ("tooltip", json!(label))]),
            ),
        }
    }

    /// Whether it was clicked since this was last asked (the first call: since it was made).
    /// A loop that checks it at every step stops at the step after a click.
    pub fn clicked(&self) -> bool {
        self.model.take_clicks()
    }

    /// Clicks since it was made.
    pub fn clicks(&self) -> u64 {
        self.model.clicks()
    }

    /// Sets the button's colour: `primary`, `success`, `info`, `warning`, `danger` or `""`.
    pub fn set_style(&self, style: &str) -> Result<()> {
        if !["primary", "success", "info", "warning", "danger", ""].contains(&style) {
            return Err(invalid(
                "Button::set_style",
                format!("{style:?} is none of primary, success, info, warning, danger, \"\""),
            ));
        }
        self.model.set(state(&[("button_style", json!(style))]));
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "Button(description={:?}, clicks={})",
            text(&self.model, "description"),
            self.clicks()
        )
    }
}

/// A checkbox (ipywidgets' `Checkbox`).
#[derive(Clone)]
pub struct Checkbox {
    model: Arc<Model>,
}
control!(Checkbox);

impl Checkbox {
    /// A checkbox labelled `description`, ticked when `value`.
    pub fn new(description: &str, value: bool) -> Checkbox {
        Checkbox {
            model: Model::open(
                "Checkbox",
                "Checkbox",
                state(&[
                    ("description", json!(description)),
                    ("value", json!(value)),
                    ("indent", json!(false)),
                ]),
            ),
        }
    }

    /// Whether it is ticked now.
    pub fn value(&self) -> bool {
        self.model.get("value").as_bool().unwrap_or(false)
    }

    /// Ticks or clears it.
    pub fn set_value(&self, value: bool) {
        self.model.set(state(&[("value", json!(value))]));
    }

    fn summary(&self) -> String {
        format!(
            "Checkbox(description={:?}, value={})",
            text(&self.model, "description"),
            self.value()
        )
    }
}

/// A choice of one of several labels (ipywidgets' `Dropdown`).
#[derive(Clone)]
pub struct Dropdown {
    model: Arc<Model>,
}
control!(Dropdown);

impl Dropdown {
    /// A dropdown of `options` with `selected` (an index) chosen. No options, or an index past
    /// them, is an error.
    pub fn new(description: &str, options: &[&str], selected: usize) -> Result<Dropdown> {
        if selected >= options.len() {
            return Err(invalid(
                "Dropdown::new",
                format!(
                    "selected index {selected} is past the {} options",
                    options.len()
                ),
            ));
        }
        Ok(Dropdown {
            model: Model::open(
                "Dropdown",
                "Dropdown",
                state(&[
                    ("description", json!(description)),
                    ("_options_labels", json!(options)),
                    ("index", json!(selected)),
                ]),
            ),
        })
    }

    fn options(&self) -> Vec<String> {
        match self.model.get("_options_labels") {
            Value::Array(labels) => labels
                .iter()
                .map(|l| l.as_str().unwrap_or("").to_string())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The chosen option's index (the first when the frontend sent none that fits).
    pub fn index(&self) -> usize {
        let n = self.options().len();
        self.model
            .get("index")
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < n)
            .unwrap_or(0)
    }

    /// The chosen option's label.
    pub fn value(&self) -> String {
        self.options()
            .get(self.index())
            .cloned()
            .unwrap_or_default()
    }

    /// Chooses the option at `index`; past the options is an error.
    pub fn set_index(&self, index: usize) -> Result<()> {
        let n = self.options().len();
        if index >= n {
            return Err(invalid(
                "Dropdown::set_index",
                format!("index {index} is past the {n} options"),
            ));
        }
        self.model.set(state(&[("index", json!(index))]));
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "Dropdown(description={:?}, value={:?}, options={:?})",
            text(&self.model, "description"),
            self.value(),
            self.options()
        )
    }
}

/// A one-line text box (ipywidgets' `Text`).
#[derive(Clone)]
pub struct Text {
    model: Arc<Model>,
}
control!(Text);

impl Text {
    /// A text box labelled `description` holding `value`.
    pub fn new(description: &str, value: &str) -> Text {
        Text {
            model: Model::open(
                "Text",
                "Text",
                state(&[
                    ("description", json!(description)),
                    ("value", json!(value)),
                    ("continuous_update", json!(true)),
                ]),
            ),
        }
    }

    /// The text now (as typed so far in the browser).
    pub fn value(&self) -> String {
        text(&self.model, "value")
    }

    /// Replaces the text.
    pub fn set_value(&self, value: &str) {
        self.model.set(state(&[("value", json!(value))]));
    }

    fn summary(&self) -> String {
        format!(
            "Text(description={:?}, value={:?})",
            text(&self.model, "description"),
            self.value()
        )
    }
}

/// A line of text a cell can change (ipywidgets' `Label`).
#[derive(Clone)]
pub struct Label {
    model: Arc<Model>,
}
control!(Label);

impl Label {
    /// A label showing `value`.
    pub fn new(value: &str) -> Label {
        Label {
            model: Model::open("Label", "Label", state(&[("value", json!(value))])),
        }
    }

    /// The text shown.
    pub fn value(&self) -> String {
        text(&self.model, "value")
    }

    /// Shows `value` instead.
    pub fn set_value(&self, value: &str) {
        self.model.set(state(&[("value", json!(value))]));
    }

    fn summary(&self) -> String {
        format!("Label({:?})", self.value())
    }
}

/// HTML a cell can change (ipywidgets' `HTML`).
#[derive(Clone)]
pub struct Html {
    model: Arc<Model>,
}
control!(Html);

impl Html {
    /// HTML showing `value`.
    pub fn new(value: &str) -> Html {
        Html {
            model: Model::open("HTML", "HTML", state(&[("value", json!(value))])),
        }
    }

    /// The HTML shown.
    pub fn value(&self) -> String {
        text(&self.model, "value")
    }

    /// Shows `value` instead.
    pub fn set_value(&self, value: &str) {
        self.model.set(state(&[("value", json!(value))]));
    }

    fn summary(&self) -> String {
        format!("Html({:?})", self.value())
    }
}

/// A progress bar (ipywidgets' `FloatProgress`).
#[derive(Clone)]
pub struct Progress {
    model: Arc<Model>,
}
control!(Progress);

impl Progress {
    /// A bar from `min` to `max`, empty. Bounds that are not finite or an empty range are
    /// errors.
    pub fn new(description: &str, min: f64, max: f64) -> Result<Progress> {
        if !(min.is_finite() && max.is_finite() && min < max) {
            return Err(invalid(
                "Progress::new",
                format!("min {min} must be below max {max}, both finite"),
            ));
        }
        Ok(Progress {
            model: Model::open(
                "FloatProgress",
                "Progress",
                state(&[
                    ("description", json!(description)),
                    ("min", json!(min)),
                    ("max", json!(max)),
                    ("value", json!(min)),
                ]),
            ),
        })
    }

    fn bound(&self, key: &str) -> f64 {
        self.model.get(key).as_f64().unwrap_or(0.0)
    }

    /// How far it is.
    pub fn value(&self) -> f64 {
        self.model.get("value").as_f64().unwrap_or(0.0)
    }

    /// Fills the bar to `value` (kept within its range; not a number is refused).
    pub fn set_value(&self, value: f64) -> Result<()> {
        if value.is_nan() {
            return Err(invalid("Progress::set_value", "value is NaN".into()));
        }
        let v = within(value, self.bound("min"), self.bound("max"));
        self.model.set(state(&[("value", json!(v))]));
        Ok(())
    }

    /// Colours the bar: `success`, `info`, `warning`, `danger` or `""`.
    pub fn set_style(&self, style: &str) -> Result<()> {
        if !["success", "info", "warning", "danger", ""].contains(&style) {
            return Err(invalid(
                "Progress::set_style",
                format!("{style:?} is none of success, info, warning, danger, \"\""),
            ));
        }
        self.model.set(state(&[("bar_style", json!(style))]));
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "Progress(description={:?}, value={}, min={}, max={})",
            text(&self.model, "description"),
            self.value(),
            self.bound("min"),
            self.bound("max")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::display::Inbound;
    use crate::widgets::model::deliver;

    fn from_browser(id: &str, state: Value) {
        deliver(&Inbound::CommMsg {
            comm_id: id.into(),
            data: json!({ "method": "update", "state": state, "buffer_paths": [] }),
        });
    }

    #[test]
    fn sliders_read_the_browser_and_stay_in_range() {
        let s = IntSlider::new("n", 0, 10, 3).unwrap();
        assert_eq!(s.value(), 3);
        from_browser(s.model_id(), json!({ "value": 8 }));
        assert_eq!(s.value(), 8);
        s.set_value(99);
        assert_eq!(s.value(), 10);
        from_browser(s.model_id(), json!({ "value": "garbage" }));
        assert_eq!(s.value(), 0);
        assert!(IntSlider::new("n", 5, 1, 3).is_err());
        assert!(IntSlider::new("n", 0, 1, 3).is_err());

        let f = FloatSlider::new("lr", 0.0, 1.0, 0.1).unwrap();
        from_browser(f.model_id(), json!({ "value": 0.25 }));
        assert_eq!(f.value(), 0.25);
        assert!(f.set_value(f64::NAN).is_err());
        assert!(f.set_step(0.0).is_err());
        assert!(FloatSlider::new("lr", 0.0, f64::INFINITY, 0.1).is_err());
        assert!(format!("{f:?}").contains("FloatSlider(description=\"lr\", value=0.25"));
    }

    #[test]
    fn a_button_answers_clicked_once_per_batch_of_clicks() {
        let b = Button::new("Stop");
        assert!(!b.clicked());
        deliver(&Inbound::CommMsg {
            comm_id: b.model_id().into(),
            data: json!({ "method": "custom", "content": { "event": "click" } }),
        });
        assert!(b.clicked());
        assert!(!b.clicked());
        assert_eq!(b.clicks(), 1);
        assert!(b.set_style("loud").is_err());
    }

    #[test]
    fn choices_text_and_progress() {
        let d = Dropdown::new("opt", &["sgd", "adam"], 0).unwrap();
        from_browser(d.model_id(), json!({ "index": 1 }));
        assert_eq!((d.index(), d.value().as_str()), (1, "adam"));
        from_browser(d.model_id(), json!({ "index": 7 }));
        assert_eq!(d.index(), 0);
        assert!(d.set_index(2).is_err());
        assert!(Dropdown::new("opt", &[], 0).is_err());

        let c = Checkbox::new("log", false);
        from_browser(c.model_id(), json!({ "value": true }));
        assert!(c.value());

        let t = Text::new("name", "a");
        from_browser(t.model_id(), json!({ "value": "ab" }));
        assert_eq!(t.value(), "ab");

        let l = Label::new("x");
        l.set_value("y");
        assert_eq!(l.value(), "y");
        let h = Html::new("<b>x</b>");
        assert_eq!(h.value(), "<b>x</b>");

        let p = Progress::new("epochs", 0.0, 10.0).unwrap();
        p.set_value(12.0).unwrap();
        assert_eq!(p.value(), 10.0);
        // Bounds the browser swapped keep the value between them, without a panic.
        from_browser(p.model_id(), json!({ "min": 10.0, "max": 0.0 }));
        p.set_value(-3.0).unwrap();
        assert_eq!(p.value(), 0.0);
        assert!(Progress::new("e", 1.0, 1.0).is_err());
        p.close();
        assert!(p.is_closed());
    }
}
