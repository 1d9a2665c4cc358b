//! `login`, `logout`, `whoami` and `session list|end`: signing in through
//! the hub's identity provider and managing people's dashboard sessions.

use fleetgate_api_types::{EndSessions, SessionList, SessionsEnded, WhoAmI};

use crate::args::{Format, SessionCmd};
use crate::client::Client;
use crate::config::Connection;
use crate::error::Result;
use crate::output::{self, Table};

pub async fn login(conn: &Connection) -> Result<()> {
    let provider = crate::login::login(&conn.hub, conn.timeout).await?;
    println!("signed in to {} through {provider}", conn.hub);
    Ok(())
}

pub async fn logout(conn: &Connection) -> Result<()> {
    if crate::login::logout(&conn.hub, conn.timeout).await? {
        println!("signed out of {}", conn.hub);
    } else {
        println!("not signed in to {}", conn.hub);
    }
    Ok(())
}

pub async fn whoami(client: &Client, format: Format) -> Result<()> {
    let me: WhoAmI = client.get("/whoami", &[]).await?;
    output::print_answer(format, &me, |me| {
        let mut out = format!("name: {}\nrole: {}\n", me.name, me.role);
        if let Some(id) = &me.identity {
            out.push_str(&format!(
                "kind: {:?}\nissuer: {}\nsubject: {}\n",
                id.kind, id.issuer, id.subject
            ));
            if let Some(email) = &id.email {
                out.push_str(&format!("email: {email}\n"));
            }
            if !id.groups.is_empty() {
                out.push_str(&format!("groups: {}\n", id.groups.join(", ")));
            }
        }
        out
    })
}

pub async fn session(client: &Client, cmd: &SessionCmd, format: Format) -> Result<()> {
    match cmd {
        SessionCmd::List { subject } => {
            let query: Vec<(&str, String)> =
                subject.iter().map(|s| ("subject", s.clone())).collect();
            let list: SessionList = client.get("/sessions", &query).await?;
            output::print_answer(format, &list.items, |items| {
                let mut t = Table::new(&["ID", "PERSON", "SUBJECT", "SIGNED IN", "EXPIRES"]);
                for s in items {
                    t.row(vec![
                        s.id.to_string(),
                        s.identity.name.clone(),
                        s.identity.subject.clone(),
                        output::time(&s.created_at),
                        output::time(&s.expires_at),
                    ]);
                }
                t.render()
            })
        }
        SessionCmd::End {
            subject,
            issuer,
            reason,
        } => {
            let body = EndSessions {
                subject: subject.clone(),
                issuer: issuer.clone(),
                reason: reason.clone(),
            };
            let v: SessionsEnded = client.post("/sessions/end", &[], &body).await?;
            output::print_answer(format, &v, |v| {
                format!("{} session(s) of {subject} ended\n", v.ended)
            })
        }
    }
}
