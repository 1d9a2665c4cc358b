//! `login`, `logout`, `whoami` and `session list|end`: signing in through
//! the hub's identity provider and managing people's dashboard sessions.

use fleetgate_api_types::{EndMySessions, EndSessions, SessionList, SessionsEnded, WhoAmI};

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
        SessionCmd::List { subject, mine } => {
            let list: SessionList = if *mine {
                client.get("/auth/sessions", &[]).await?
            } else {
                let query: Vec<(&str, String)> =
                    subject.iter().map(|s| ("subject", s.clone())).collect();
                client.get("/sessions", &query).await?
            };
            output::print_answer(format, &list.items, |items| {
                let mut t = Table::new(&[
                    "ID",
                    "PERSON",
                    "SUBJECT",
                    "SIGNED IN",
                    "LAST USED",
                    "EXPIRES",
                    "DEVICE",
                ]);
                for s in items {
                    t.row(vec![
                        s.id.to_string(),
                        s.identity.name.clone(),
                        s.identity.subject.clone(),
                        output::time(&s.created_at),
                        s.last_used_at
                            .as_ref()
                            .map(output::time)
                            .unwrap_or_default(),
                        output::time(&s.expires_at),
                        s.user_agent.clone().unwrap_or_default(),
                    ]);
                }
                t.render()
            })
        }
        SessionCmd::End {
            subject,
            id,
            mine,
            issuer,
            reason,
        } => {
            let v: SessionsEnded = if *mine {
                let body = EndMySessions {
                    id: *id,
                    keep_current: false,
                };
                client.post("/auth/sessions/end", &[], &body).await?
            } else {
                let body = EndSessions {
                    subject: subject.clone().unwrap_or_default(),
                    issuer: issuer.clone(),
                    reason: reason.clone(),
                    id: *id,
                };
                client.post("/sessions/end", &[], &body).await?
            };
            let whose = match (mine, subject) {
                (true, _) => " of yours".to_string(),
                (false, Some(s)) => format!(" of {s}"),
                (false, None) => String::new(),
            };
            output::print_answer(format, &v, |v| {
                format!("{} session(s){whose} ended\n", v.ended)
            })
        }
    }
}
