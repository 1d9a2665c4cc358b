//! Pages of the list endpoints, as documented (the handlers return the
//! generic [`crate::Page`]).

use utoipa::ToSchema;

use crate::access::AccessPolicyRecord;
use crate::records::{ApiToken, AuditEntry, Cluster, GateRecord, OverrideRecord};

macro_rules! page_doc {
    ($name:ident, $item:ty, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, ToSchema)]
        #[schema(rename_all = "camelCase")]
        pub struct $name {
            /// The items of this page.
            pub items: Vec<$item>,
            /// Pass as `cursor` to get the next page; absent on the last page.
            pub next_cursor: Option<String>,
        }
    };
}

page_doc!(GatePage, GateRecord, "A page of gates.");
page_doc!(ClusterPage, Cluster, "A page of clusters.");
page_doc!(OverridePage, OverrideRecord, "A page of overrides.");
page_doc!(AuditPage, AuditEntry, "A page of audit entries.");
page_doc!(TokenPage, ApiToken, "A page of API tokens.");
page_doc!(
    AccessPolicyPage,
    AccessPolicyRecord,
    "A page of access policies."
);
page_doc!(
    ApprovalPage,
    crate::ApprovalRequest,
    "A page of approval requests."
);
