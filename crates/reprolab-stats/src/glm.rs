//! DeepCrime's GLM test.
//!
//! DeepCrime (mutation testing of DL systems) decides whether a mutant is
//! killed by fitting a statsmodels GLM, Gaussian family with identity link,
//! `metric ~ group` (group 0 for the original runs `x`, 1 for the mutant runs
//! `y`), and taking the Wald test p-value of the group coefficient. To
//! reproduce those verdicts we implement that exact computation in closed
//! form instead of a generic GLM solver.
//!
//! For a single binary regressor the Gaussian-identity GLM is ordinary least
//! squares: the coefficient is `mean(y) - mean(x)`, the dispersion (scale) is
//! the Pearson chi² over residual df, `SSR / (n - 2)` — the pooled variance —
//! and its standard error is `sqrt(scale * (1/nx + 1/ny))`. Unlike a t-test,
//! statsmodels' GLM reports a **normal** (z) p-value, so results are a bit
//! more liberal than Student's t at small n.
//!
//! One difference remains, on purpose: DeepCrime (`stats.py`, `p_value_glm`) does
//! not read `glm_results.pvalues` but parses the text of the summary table
//! (`float(str(glm_sum.tables[1][2][4]))`), which statsmodels prints with
//! `"%#6.3f"`. Its p-value is therefore rounded to 3 decimals, and its
//! `p < 0.05` means about `p < 0.0495` here (a constant, all-equal sample
//! gives it `nan`, i.e. not significant; [`glm_test`] gives `None`). This
//! function returns the unrounded p-value.

use crate::TestResult;
use crate::describe::mean;
use crate::dist::normal_two_sided;

/// Wald z-test of the group coefficient in `metric ~ group` (GLM, Gaussian,
/// identity link), two-sided.
///
/// `statistic` is `z = beta / se` with `beta = mean(y) - mean(x)`; `method`
/// is `"glm-wald"`. `None` when either group is empty, there are fewer than 3
/// values overall, or all residuals are zero and the means are equal. With
/// zero residuals and different means `z = ±inf`, `p = 0`.
pub fn glm_test(x: &[f64], y: &[f64]) -> Option<TestResult> {
    let (nx, ny) = (x.len(), y.len());
    if nx == 0 || ny == 0 || nx + ny < 3 {
        return None;
    }
    let (mx, my) = (mean(x), mean(y));
    let ssr: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum::<f64>()
        + y.iter().map(|v| (v - my) * (v - my)).sum::<f64>();
    let scale = ssr / (nx + ny - 2) as f64;
    let beta = my - mx;
    let se = (scale * (1.0 / nx as f64 + 1.0 / ny as f64)).sqrt();
    let z = if se > 0.0 {
        beta / se
    } else if beta == 0.0 {
        return None;
    } else {
        beta.signum() * f64::INFINITY
    };
    Some(TestResult {
        statistic: z,
        p_value: normal_two_sided(z),
        method: "glm-wald",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs()
    }

    // python (statsmodels' GLM Gaussian/identity Wald test, in closed form):
    //   def glm(x, y):
    //       x = np.asarray(x, float); y = np.asarray(y, float)
    //       beta = y.mean() - x.mean()
    //       scale = (((x-x.mean())**2).sum() + ((y-y.mean())**2).sum()) / (len(x)+len(y)-2)
    //       se = np.sqrt(scale * (1/len(x) + 1/len(y)))
    //       z = beta / se
    //       return z, 2*scipy.stats.norm.sf(abs(z))

    #[test]
    fn matches_closed_form_with_scipy_norm() {
        // python: glm(X, Y) -> (-1.3967398013944718, 0.16249183068762796)
        //   (z equals minus the pooled-variance t: ttest_ind(X, Y).statistic = 1.39673980139447)
        let x = [
            0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
        ];
        let y = [0.90, 0.92, 0.9333, 0.93, 0.92, 0.91, 0.94, 0.89, 0.92, 0.91];
        let r = glm_test(&x, &y).unwrap();
        assert_eq!(r.method, "glm-wald");
        assert!(rel_close(r.statistic, -1.3967398013944718, 1e-10));
        assert!(rel_close(r.p_value, 0.16249183068762796, 1e-9));

        // python: y20=np.array([0.9+((i*5)%7)/100 for i in range(20)]); glm(X, y20)
        //   -> (0.5193418727163561, 0.6035223584217578)
        let y20: Vec<f64> = (0..20)
            .map(|i| 0.9 + ((i * 5) % 7) as f64 / 100.0)
            .collect();
        let r = glm_test(&x, &y20).unwrap();
        assert!(rel_close(r.statistic, 0.5193418727163561, 1e-10));
        assert!(rel_close(r.p_value, 0.6035223584217578, 1e-9));

        // python: glm([0.5,0.6,0.7], [0.9,0.95,0.97,0.99])
        //   -> (6.596664187573817, 4.205117658520496e-11)
        let r = glm_test(&[0.5, 0.6, 0.7], &[0.9, 0.95, 0.97, 0.99]).unwrap();
        assert!(rel_close(r.statistic, 6.596664187573817, 1e-10));
        assert!(rel_close(r.p_value, 4.205117658520496e-11, 1e-7));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(glm_test(&[], &[1.0, 2.0]).is_none());
        assert!(glm_test(&[1.0], &[2.0]).is_none());
        assert!(glm_test(&[0.9333; 3], &[0.9333; 3]).is_none());
        let r = glm_test(&[0.9; 3], &[0.95; 3]).unwrap();
        assert_eq!(r.statistic, f64::INFINITY);
        assert_eq!(r.p_value, 0.0);
    }
}
