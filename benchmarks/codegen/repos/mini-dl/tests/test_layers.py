import torch
from torch import nn

from mini_dl.layers import RMSNorm, TokenClassifier


class TestRMSNorm:
    def test_unit_weight_normalises_rms(self):
        torch.manual_seed(0)
        x = torch.randn(4, 7, 16) * 5
        y = RMSNorm(16)(x)
        assert y.shape == x.shape
        assert torch.allclose(y.pow(2).mean(-1), torch.ones(4, 7), atol=1e-4)

    def test_by_hand_with_weight(self):
        norm = RMSNorm(2, eps=0.0)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor([1.0, 2.0]))
        y = norm(torch.tensor([[3.0, 4.0]]))  # rms = sqrt(12.5)
        r = 12.5 ** 0.5
        assert torch.allclose(y, torch.tensor([[3.0 / r, 8.0 / r]]))

    def test_no_centring_and_eps(self):
        norm = RMSNorm(3, eps=1.0)
        y = norm(torch.tensor([[1.0, 1.0, 1.0]]))
        assert torch.allclose(y, torch.full((1, 3), 1 / 2 ** 0.5))

    def test_half_precision_keeps_dtype(self):
        x = torch.tensor([[300.0, 400.0]], dtype=torch.float16)  # x**2 overflows in float16
        y = RMSNorm(2)(x)
        assert y.dtype == torch.float16
        assert torch.isfinite(y).all()
        assert torch.allclose(y.float(), torch.tensor([[0.8485, 1.1314]]), atol=1e-2)


def test_token_classifier_shapes():
    model = TokenClassifier(vocab_size=20, dim=8, num_labels=3)
    out = model(torch.randint(0, 20, (2, 5)))
    assert out.shape == (2, 5, 3)
    assert isinstance(model.norm, RMSNorm) and isinstance(model.head, nn.Linear)
