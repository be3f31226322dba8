use corrigible_tools::{
    BUILTIN_TOOLS, BuiltinConfig, BuiltinError, WeatherConfig, builtin_registry, register_builtins,
};
use serde_json::json;

#[test]
fn all_builtins_by_default() {
    let registry = builtin_registry(&BuiltinConfig::default()).unwrap();
    assert_eq!(registry.names(), BUILTIN_TOOLS.to_vec());
    for spec in registry.specs() {
        assert_eq!(
            spec.parameters["additionalProperties"],
            json!(false),
            "{}",
            spec.name
        );
        assert!(!spec.description.is_empty());
        let properties = spec.parameters["properties"].as_object().unwrap();
        for (field, schema) in properties {
            assert!(schema["description"].is_string(), "{}.{field}", spec.name);
        }
    }
}

#[test]
fn a_named_subset() {
    let config = BuiltinConfig {
        tools: Some(vec!["weather".into(), "calculator".into()]),
        weather: WeatherConfig::default(),
    };
    let registry = builtin_registry(&config).unwrap();
    assert_eq!(registry.names(), vec!["calculator", "weather"]);
}

#[test]
fn unknown_names_are_refused_before_anything_is_registered() {
    let mut registry = corrigible::ToolRegistry::new();
    let error = register_builtins(
        &mut registry,
        Some(&["time", "stocks"]),
        WeatherConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        error,
        BuiltinError::UnknownTool {
            name: "stocks".into()
        }
    );
    assert!(error.to_string().contains("`stocks`"));
    assert!(registry.is_empty());
}

#[test]
fn a_bad_weather_url_is_a_configuration_error() {
    let config = BuiltinConfig {
        tools: None,
        weather: WeatherConfig::with_base_url("not a url"),
    };
    let error = builtin_registry(&config).unwrap_err();
    assert!(matches!(error, BuiltinError::Weather(_)), "{error:?}");
    let only_time = BuiltinConfig {
        tools: Some(vec!["time".into()]),
        ..config
    };
    assert!(builtin_registry(&only_time).is_ok());
}

#[test]
fn registering_twice_is_a_registry_error() {
    let mut registry = corrigible::ToolRegistry::new();
    register_builtins(&mut registry, Some(&["time"]), WeatherConfig::default()).unwrap();
    let error =
        register_builtins(&mut registry, Some(&["time"]), WeatherConfig::default()).unwrap_err();
    assert!(matches!(error, BuiltinError::Registry(_)), "{error:?}");
}
