//! Go's `sort.SliceStable`, step for step (insertion sort on blocks of 20,
//! then SymMerge).
//!
//! With a comparator that is a strict weak order, any stable sort gives the
//! same result. kube's are not always one: it sorts a merged list by its
//! `$setElementOrder` list with a comparator that says "less" whenever either
//! position is unknown. The result then depends on the exact algorithm, not
//! just on stability: another stable sort could order such lists differently
//! from kube-apiserver, so this is Go's algorithm reproduced rather than a
//! general-purpose sort.

/// Go's `sort.SliceStable(data, less)` (insertion sort on blocks of 20, then
/// SymMerge): the order Go leaves, also when `less` is not a strict order.
pub fn slice_stable<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block_size = 20;
    let (mut a, mut b) = (0, block_size);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block_size;
    }
    insertion_sort(data, a, n, &less);
    while block_size < n {
        a = 0;
        b = 2 * block_size;
        while b <= n {
            sym_merge(data, a, a + block_size, b, &less);
            a = b;
            b += 2 * block_size;
        }
        let m = a + block_size;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block_size *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i - 1 {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_stable_is_a_stable_sort() {
        for n in [0, 1, 2, 19, 20, 21, 45, 100] {
            let mut items: Vec<(u32, usize)> = (0..n).map(|i| ((i * 7919 % 13) as u32, i)).collect();
            let mut expected = items.clone();
            expected.sort_by_key(|(k, _)| *k);
            slice_stable(&mut items, |a, b| a.0 < b.0);
            assert_eq!(items, expected, "n={n}");
        }
    }
}
