mod common;

#[test]
fn smoke() {
    let Some(m) = common::model() else { return };
    let req = common::request("What is 17 * 23?", common::tools());
    let prompt = m.render(&req.messages).unwrap();
    println!("{prompt}");
    let t = std::time::Instant::now();
    let r = m.complete_blocking(&req).unwrap();
    println!("{:?} in {:?}", r, t.elapsed());
    let g = m.generate(&prompt, None).unwrap();
    println!("free: {:?}", m.tokenizer().decode(&g.tokens).unwrap());
    println!("{:?}", g);
}
