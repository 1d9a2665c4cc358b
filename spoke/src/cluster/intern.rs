//! One shared copy of each value that repeats across watched objects (a
//! namespace, a label set, the revision a thousand Kustomizations applied, a
//! Ready message): the watches keep `Arc`s, so a copy for a pass or a report
//! entry is a reference count, never an allocation. Each watch owns its sets;
//! values no object holds any more are dropped by [`Interned::sweep`].

use std::{collections::HashSet, hash::Hash, sync::Arc};

/// A set of shared values of one type.
#[derive(Debug)]
pub struct Interned<T: ?Sized>(HashSet<Arc<T>>);

impl<T: ?Sized> Default for Interned<T> {
    fn default() -> Self {
        Interned(HashSet::new())
    }
}

impl<T: ?Sized + Eq + Hash> Interned<T> {
    /// The shared copy of `value`, made on first use.
    pub fn get(&mut self, value: &T) -> Arc<T>
    where
        Arc<T>: for<'a> From<&'a T>,
    {
        if let Some(v) = self.0.get(value) {
            return v.clone();
        }
        let v: Arc<T> = Arc::from(value);
        self.0.insert(v.clone());
        v
    }

    /// Forgets values only this set still holds.
    pub fn sweep(&mut self) {
        self.0.retain(|v| Arc::strong_count(v) > 1);
        self.0.shrink_to_fit();
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl<T: Eq + Hash> Interned<T> {
    /// The shared copy of an owned `value` (moved in on first use).
    pub fn take(&mut self, value: T) -> Arc<T> {
        if let Some(v) = self.0.get(&value) {
            return v.clone();
        }
        let v = Arc::new(value);
        self.0.insert(v.clone());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_copy_until_swept() {
        let mut set: Interned<str> = Interned::default();
        let a = set.get("main@sha1:1");
        let b = set.get(&String::from("main@sha1:1"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = set.get("other");
        assert_eq!(set.len(), 2);
        drop(c);
        set.sweep();
        assert_eq!(set.len(), 1, "a value nobody holds is dropped");
        assert!(Arc::ptr_eq(&set.get("main@sha1:1"), &a));
        let mut owned: Interned<Vec<u8>> = Interned::default();
        let x = owned.take(vec![1]);
        assert!(Arc::ptr_eq(&x, &owned.take(vec![1])));
    }
}
