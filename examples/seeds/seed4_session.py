import torch
from torch.autograd import Variable

x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)
y = x + 2
print(y)
print(x.grad_fn)  # None
print(y.grad_fn)  # <AddBackward0 object at 0x7f84ebc216d8>
z = y * y * 3
out = z.mean()

print(z, out)
out.backward()
print(x.grad)  # print gradients d(out)/dx
