//! Three rayon programs (a parallel sort, a word count into a `HashMap`, a Mandelbrot image
//! with `par_chunks_mut`) written once and compiled twice: with `use rayon::prelude::*;` and
//! with `use footprint::par::prelude::*;`, nothing else changed. Both give the same results.

macro_rules! programs {
    ($($prelude:ident)::+) => {
        use $($prelude)::+::*;
        use std::collections::HashMap;

        /// Sorts a pseudo-random vector, by value and by a key.
        pub fn parallel_sort(n: usize) -> (Vec<u64>, Vec<u64>) {
            let mut x = 88172645463325252u64;
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 1_000_000
                })
                .collect();
            let mut by_digit = v.clone();
            v.par_sort();
            by_digit.par_sort_by_key(|d| d % 10);
            (v, by_digit)
        }

        /// Counts the words of some lines.
        pub fn word_count(lines: &[String]) -> HashMap<String, usize> {
            lines
                .par_iter()
                .flat_map(|line| line.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>())
                .fold(HashMap::new, |mut counts: HashMap<String, usize>, word| {
                    *counts.entry(word).or_insert(0) += 1;
                    counts
                })
                .reduce(HashMap::new, |mut a, b| {
                    for (word, n) in b {
                        *a.entry(word).or_insert(0) += n;
                    }
                    a
                })
        }

        /// Escape-time Mandelbrot image, one row per chunk.
        pub fn mandelbrot(width: usize, height: usize) -> Vec<u8> {
            let mut pixels = vec![0u8; width * height];
            pixels
                .par_chunks_mut(width)
                .enumerate()
                .for_each(|(y, row)| {
                    for (x, p) in row.iter_mut().enumerate() {
                        let c = (
                            -2.0 + 3.0 * x as f64 / width as f64,
                            -1.2 + 2.4 * y as f64 / height as f64,
                        );
                        let mut z = (0.0f64, 0.0f64);
                        let mut i = 0u8;
                        while i < 255 && z.0 * z.0 + z.1 * z.1 <= 4.0 {
                            z = (z.0 * z.0 - z.1 * z.1 + c.0, 2.0 * z.0 * z.1 + c.1);
                            i += 1;
                        }
                        *p = i;
                    }
                });
            pixels
        }
    };
}

mod with_rayon {
    programs!(rayon::prelude);
}

mod with_footprint {
    programs!(footprint::par::prelude);
}

fn text() -> Vec<String> {
    let words = [
        "the", "quick", "Brown", "fox", "jumps", "over", "lazy", "dog", "The",
    ];
    (0..2000)
        .map(|i| {
            (0..(i % 13))
                .map(|k| words[(i * 7 + k * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn parallel_sort_gives_rayons_result() {
    let (a, b) = with_footprint::parallel_sort(200_000);
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!((a, b), with_rayon::parallel_sort(200_000));
}

#[test]
fn word_count_gives_rayons_result() {
    let lines = text();
    let counts = with_footprint::word_count(&lines);
    assert_eq!(counts, with_rayon::word_count(&lines));
    let total: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    assert_eq!(counts.values().sum::<usize>(), total);
    assert!(counts.contains_key("the") && !counts.contains_key("The"));
}

#[test]
fn mandelbrot_gives_rayons_image() {
    let image = with_footprint::mandelbrot(300, 200);
    assert_eq!(image, with_rayon::mandelbrot(300, 200));
    assert!(image.contains(&255) && image.contains(&1));
}
