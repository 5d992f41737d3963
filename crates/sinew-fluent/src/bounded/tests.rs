use super::BoundedMap;

#[test]
fn the_oldest_entries_go_past_the_cap() {
    let mut map = BoundedMap { cap: 3, ..BoundedMap::default() };
    for key in ["a", "b", "c", "d"] {
        map.insert(key, key.len());
    }
    assert_eq!(map.len(), 3);
    assert!(map.get("a").is_none() && map.get("d").is_some());
    assert_eq!(map.remove("c"), Some(1));
    map.insert("e", 1);
    map.insert("f", 1);
    assert!(map.get("b").is_none(), "b was the oldest left");
    *map.entry_or_insert_with("e", || 9) += 1;
    assert_eq!(map.get("e"), Some(&2));
}
