//! The fleet page at scale, in headless Chromium against a real hub process: the hub
//! filters, groups and pages the rows (`GET /api/v1/dashboard/fleet?limit=…`), the page
//! draws one page of them and steps through the rest, and the filters are answered by the
//! server (the rows shown are exactly those the filter keeps, across pages).

#[macro_use]
mod dashboard_support;

use dashboard_support::fleet::{cluster, seed_bulk};
use dashboard_support::{ADMIN_TOKEN, Browser, Hub};
use serde_json::{Value, json};

/// Clusters in the test fleet: two and a half pages.
const FLEET: usize = 250;
const ROWS: &str = "document.querySelectorAll('#fleet-grid tbody tr:not(.group-row)').length";
const NAMES: &str =
    "[...document.querySelectorAll('#fleet-grid tbody th.name-col a')].map(a => a.textContent)";

fn set(id: &str, value: &str) -> String {
    format!(
        "(e => (e.value = {value:?}, e.dispatchEvent(new Event(e.tagName === 'INPUT' ? 'input' : 'change')), true))\
         (document.getElementById({id:?}))"
    )
}

/// The names [`cluster`] gives clusters `0..FLEET` that `keep` keeps, in the hub's order.
fn names(keep: impl Fn(&Value) -> bool) -> Vec<String> {
    let mut out: Vec<String> = (0..FLEET)
        .map(cluster)
        .filter(|(_, labels)| keep(labels))
        .map(|(n, _)| n)
        .collect();
    out.sort();
    out
}

async fn shown(b: &Browser) -> Vec<String> {
    serde_json::from_value(b.eval(NAMES).await).expect("names")
}

/// Every row the page shows, stepping through the pages with "Next".
async fn every_page(b: &Browser) -> Vec<String> {
    let mut all = shown(b).await;
    while b
        .eval("!document.getElementById('page-next').disabled")
        .await
        == json!(true)
    {
        let first = b
            .eval("document.getElementById('page-info').textContent")
            .await;
        b.click("#page-next").await;
        b.wait_js(
            &format!("document.getElementById('page-info').textContent !== {first}"),
            "the next page",
        )
        .await;
        all.extend(shown(b).await);
    }
    all
}

browser_test!(the_fleet_page_pages_and_filters_on_the_server, |b| {
    let hub = Hub::start("paging").await;
    seed_bulk(&hub, FLEET, 3).await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;

    // One page of rows, not the fleet; the cards count the whole fleet.
    b.wait_js(&format!("{ROWS} === 100"), "the first page")
        .await;
    assert_eq!(
        b.eval("document.getElementById('page-info').textContent.trim()")
            .await,
        json!("1–100 of 250")
    );
    assert_eq!(
        b.eval("document.querySelector('#counts .count.total .n').textContent")
            .await,
        json!("250")
    );
    assert_eq!(
        b.eval("document.getElementById('count-offline').querySelector('.n').textContent")
            .await,
        json!("250"),
        "no spoke connected: every cluster offline"
    );
    // The pages add up to the fleet, in order, each row once.
    assert_eq!(every_page(&b).await, names(|_| true));
    assert_eq!(
        b.eval("document.getElementById('page-info').textContent.trim()")
            .await,
        json!("201–250 of 250")
    );
    b.click("#page-prev").await;
    b.wait_eq(
        "document.getElementById('page-info').textContent.trim()",
        "101–200 of 250",
    )
    .await;

    // A label filter starts again at the first page and keeps exactly its rows.
    b.eval(&set("filter-text", "region=us")).await;
    let us = names(|l| l["region"] == "us");
    b.wait_js(
        &format!(
            "document.getElementById('page-info').textContent.trim() === '1–{} of {}'",
            us.len().min(100),
            us.len()
        ),
        "the us clusters",
    )
    .await;
    assert_eq!(every_page(&b).await, us);

    // Words combine: a label, a negated label and a part of the name.
    b.eval(&set("filter-text", "env!=prod, tier=data -1")).await;
    let some = names(|l| l["env"] != "prod" && l["tier"] == "data");
    let some: Vec<String> = some.into_iter().filter(|n| n.contains("-1")).collect();
    b.wait_js(
        &format!(
            "document.getElementById('page-info').textContent.trim().endsWith('of {}')",
            some.len()
        ),
        "combined filter",
    )
    .await;
    assert_eq!(every_page(&b).await, some);
    b.eval(&set("filter-text", "")).await;

    // The state filter is the server's too: every spoke is offline, none is open.
    b.eval(&set("filter-state", "offline")).await;
    b.wait_eq(
        "document.getElementById('page-info').textContent.trim()",
        "1–100 of 250",
    )
    .await;
    b.eval(&set("filter-state", "")).await;

    // Group by env: the groups' counts are over all their rows, not the page's.
    b.eval(&set("group-by", "env")).await;
    b.wait_js(
        "document.querySelectorAll('tr.group-row').length >= 1",
        "groups",
    )
    .await;
    let dev = names(|l| l["env"] == "dev").len();
    assert!(
        b.eval("document.querySelector(\"button[data-group='dev']\").parentElement.textContent")
            .await
            .as_str()
            .is_some_and(|t| t.contains(&format!(" {dev} clusters"))),
        "the dev group counts its {dev} clusters"
    );
    // Collapsing a group leaves its rows out of the pages.
    b.click("button[data-group='dev']").await;
    let rest = FLEET - dev;
    b.wait_js(
        &format!("document.getElementById('page-info').textContent.trim().endsWith('of {rest}')"),
        "dev collapsed",
    )
    .await;
    b.screenshot("fleet-paged-grouped").await;

    // The same parameters through REST, and a bad one refused naming it.
    let page = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/dashboard/fleet?limit=10&filter=region%3Dus&sort=attention",
            None,
        )
        .await;
    assert_eq!(page["clusters"].as_array().map(Vec::len), Some(10));
    assert_eq!(page["total"], json!(us.len()));
    assert!(page["nextCursor"].is_string());
    let (status, body) = hub
        .request(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/dashboard/fleet?state=shut",
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["field"], json!("state"));
    let (status, body) = hub
        .request(ADMIN_TOKEN, "GET", "/api/v1/dashboard/fleet?limit=0", None)
        .await;
    assert_eq!((status, &body["error"]["field"]), (422, &json!("limit")));
});
