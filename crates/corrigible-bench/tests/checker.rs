//! The BFCL checker on hand-made calls.

use corrigible_bench::bfcl::{BfclCategory, Call, CheckError, FunctionDef, check};
use serde_json::{Map, Value, json};

fn function(name: &str, parameters: Value) -> FunctionDef {
    FunctionDef {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

fn area() -> Vec<FunctionDef> {
    vec![function(
        "geometry.area_circle",
        json!({"type": "dict", "properties": {
            "radius": {"type": "float"},
            "units": {"type": "string"},
            "city": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "round": {"type": "integer"}
        }, "required": ["radius"]}),
    )]
}

fn answer(entries: Value) -> Vec<Map<String, Value>> {
    serde_json::from_value(entries).unwrap()
}

fn call(name: &str, args: Value) -> Call {
    Call {
        name: name.into(),
        arguments: args.as_object().unwrap().clone(),
    }
}

fn simple(answer_json: Value, args: Value) -> Result<(), CheckError> {
    check(
        BfclCategory::Simple,
        &area(),
        &answer(answer_json),
        &[call("geometry_area_circle", args)],
    )
}

#[test]
fn right_call_passes_with_the_dotted_name_mapped() {
    let expected = json!([{"geometry.area_circle": {"radius": [10.0], "units": ["meters", ""]}}]);
    assert_eq!(
        simple(expected, json!({"radius": 10.0, "units": "meters"})),
        Ok(())
    );
}

#[test]
fn wrong_value_fails() {
    let expected = json!([{"geometry.area_circle": {"radius": [10.0]}}]);
    assert!(matches!(
        simple(expected, json!({"radius": 12.5})),
        Err(CheckError::WrongValue { .. })
    ));
}

#[test]
fn missing_required_fails() {
    let expected = json!([{"geometry.area_circle": {"radius": [10.0], "units": ["meters"]}}]);
    assert_eq!(
        simple(expected, json!({"units": "meters"})),
        Err(CheckError::MissingRequired("radius".into()))
    );
}

#[test]
fn extra_parameter_fails_whether_declared_or_not() {
    let expected = json!([{"geometry.area_circle": {"radius": [10.0]}}]);
    assert_eq!(
        simple(expected.clone(), json!({"radius": 10.0, "color": "red"})),
        Err(CheckError::Unexpected("color".into()))
    );
    // Declared, but not in the answer: still unexpected.
    assert_eq!(
        simple(expected, json!({"radius": 10.0, "units": "m"})),
        Err(CheckError::Unexpected("units".into()))
    );
}

#[test]
fn int_is_accepted_for_float_but_not_float_for_int_nor_bool_for_int() {
    let expected = json!([{"geometry.area_circle": {"radius": [10.0], "round": [2, ""]}}]);
    assert_eq!(simple(expected.clone(), json!({"radius": 10})), Ok(()));
    assert!(matches!(
        simple(expected.clone(), json!({"radius": 10, "round": 2.0})),
        Err(CheckError::WrongType { .. })
    ));
    assert!(matches!(
        simple(expected.clone(), json!({"radius": 10, "round": true})),
        Err(CheckError::WrongType { .. })
    ));
    assert!(matches!(
        simple(expected, json!({"radius": "10"})),
        Err(CheckError::WrongType { .. })
    ));
}

#[test]
fn strings_are_normalised_on_both_sides() {
    let expected =
        json!([{"geometry.area_circle": {"radius": [1], "city": ["San Francisco, CA"]}}]);
    assert_eq!(
        simple(
            expected.clone(),
            json!({"radius": 1, "city": "san francisco ca"})
        ),
        Ok(())
    );
    assert_eq!(
        simple(
            expected.clone(),
            json!({"radius": 1, "city": "SAN-FRANCISCO/CA."})
        ),
        Ok(())
    );
    assert!(simple(expected, json!({"radius": 1, "city": "Los Angeles"})).is_err());
}

#[test]
fn lists_compare_in_order_with_element_types_checked() {
    let expected = json!([{"geometry.area_circle": {"radius": [1], "tags": [["Red", "blue"]]}}]);
    assert_eq!(
        simple(
            expected.clone(),
            json!({"radius": 1, "tags": ["red", "Blue"]})
        ),
        Ok(())
    );
    assert!(
        simple(
            expected.clone(),
            json!({"radius": 1, "tags": ["blue", "red"]})
        )
        .is_err()
    );
    assert!(matches!(
        simple(expected, json!({"radius": 1, "tags": ["red", 3]})),
        Err(CheckError::WrongType { .. })
    ));
}

#[test]
fn optional_empty_string_allows_omission_and_nothing_else_does() {
    let optional = json!([{"geometry.area_circle": {"radius": [5], "units": ["units", ""]}}]);
    assert_eq!(simple(optional.clone(), json!({"radius": 5})), Ok(()));
    assert_eq!(
        simple(optional, json!({"radius": 5, "units": "units"})),
        Ok(())
    );
    let mandatory = json!([{"geometry.area_circle": {"radius": [5], "units": ["units"]}}]);
    assert_eq!(
        simple(mandatory, json!({"radius": 5})),
        Err(CheckError::MissingOptional("units".into()))
    );
}

#[test]
fn wrong_function_and_wrong_count_fail() {
    let functions = vec![
        function("a", json!({"type": "dict", "properties": {}})),
        function("b", json!({"type": "dict", "properties": {}})),
    ];
    let expected = answer(json!([{"b": {}}]));
    assert_eq!(
        check(
            BfclCategory::Multiple,
            &functions,
            &expected,
            &[call("b", json!({}))]
        ),
        Ok(())
    );
    assert!(matches!(
        check(
            BfclCategory::Multiple,
            &functions,
            &expected,
            &[call("a", json!({}))]
        ),
        Err(CheckError::WrongName { .. })
    ));
    assert!(matches!(
        check(BfclCategory::Multiple, &functions, &expected, &[]),
        Err(CheckError::WrongCount {
            expected: 1,
            got: 0
        })
    ));
}

#[test]
fn parallel_calls_match_in_any_order_but_not_twice() {
    let functions = vec![function(
        "spotify.play",
        json!({"type": "dict", "properties": {
            "artist": {"type": "string"}, "duration": {"type": "integer"}
        }, "required": ["artist", "duration"]}),
    )];
    let expected = answer(json!([
        {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
        {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}
    ]));
    let maroon = call(
        "spotify_play",
        json!({"artist": "Maroon 5", "duration": 15}),
    );
    let taylor = call(
        "spotify_play",
        json!({"artist": "Taylor Swift", "duration": 20}),
    );
    assert_eq!(
        check(
            BfclCategory::Parallel,
            &functions,
            &expected,
            &[maroon.clone(), taylor.clone()]
        ),
        Ok(())
    );
    assert!(matches!(
        check(
            BfclCategory::Parallel,
            &functions,
            &expected,
            &[taylor.clone(), taylor.clone()]
        ),
        Err(CheckError::NoMatch { index: 1, .. })
    ));
    assert!(matches!(
        check(BfclCategory::Parallel, &functions, &expected, &[taylor]),
        Err(CheckError::WrongCount {
            expected: 2,
            got: 1
        })
    ));
}

#[test]
fn irrelevance_passes_only_without_calls() {
    let functions = area();
    assert_eq!(
        check(BfclCategory::Irrelevance, &functions, &[], &[]),
        Ok(())
    );
    assert!(matches!(
        check(
            BfclCategory::Irrelevance,
            &functions,
            &[],
            &[call("geometry_area_circle", json!({"radius": 1}))]
        ),
        Err(CheckError::WrongCount {
            expected: 0,
            got: 1
        })
    ));
}

#[test]
fn dict_values_compare_key_by_key() {
    let functions = vec![function(
        "book",
        json!({"type": "dict", "properties": {"room": {"type": "dict"}}}),
    )];
    let expected = answer(json!([{"book": {"room": [{"type": ["double"], "view": ["sea", ""]}]}}]));
    let ok = check(
        BfclCategory::Simple,
        &functions,
        &expected,
        &[call("book", json!({"room": {"type": "Double"}}))],
    );
    assert_eq!(ok, Ok(()));
    let extra_key = check(
        BfclCategory::Simple,
        &functions,
        &expected,
        &[call(
            "book",
            json!({"room": {"type": "double", "floor": 2}}),
        )],
    );
    assert!(extra_key.is_err());
}
