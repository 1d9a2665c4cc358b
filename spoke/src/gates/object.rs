//! What names a Gate object (`gates.fleetgate.io`): its group, version and kind, the labels
//! and annotations the spoke writes on mirrored ones, and references to it for Events.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    ResourceExt,
    api::DynamicObject,
    core::{ApiResource, GroupVersionKind},
};

pub const GROUP: &str = "fleetgate.io";
pub const VERSION: &str = "v1";
pub const KIND: &str = "Gate";
/// `hub` on Gate objects the spoke mirrors from the hub.
pub const ORIGIN_LABEL: &str = "fleetgate.io/origin";
/// The hub's version of a mirrored gate (tells a person's edit from the hub's).
pub const HUB_VERSION_ANNOTATION: &str = "fleetgate.io/hub-version";

/// The API resource of Gate objects.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "gates")
}

/// Whether a Gate object is one the spoke mirrors from the hub.
pub fn is_from_hub(obj: &DynamicObject) -> bool {
    obj.labels().get(ORIGIN_LABEL).map(String::as_str) == Some("hub")
}

/// A reference to a Gate object for Events.
pub(super) fn reference(obj: &DynamicObject) -> ObjectReference {
    ObjectReference {
        api_version: Some(format!("{GROUP}/{VERSION}")),
        kind: Some(KIND.to_owned()),
        name: Some(obj.name_any()),
        uid: obj.uid(),
        resource_version: obj.resource_version(),
        ..ObjectReference::default()
    }
}
